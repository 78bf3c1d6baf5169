//go:build unix

package pgcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

const (
	maxLogSize = 16 << 20 // rotated to postgres.log.1 beyond this, at start
	tailLines  = 20       // lines of log quoted in errors
	tailBytes  = 64 << 10 // at most this much of the log is read for a tail
)

// serverLog is the file (data-dir/log/postgres.log) that receives the
// server's stderr and initdb's output, appended to across runs.
type serverLog struct {
	path string
}

// rotate moves a log grown beyond maxLogSize aside, keeping one old file.
func (l serverLog) rotate() error {
	fi, err := os.Stat(l.path)
	if err != nil || fi.Size() <= maxLogSize {
		return nil
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("pgcluster: rotate %s: %w", l.path, err)
	}
	return nil
}

// open opens the log for appending, owned by the run-as user, and returns
// the current size: the offset from which this run's output starts.
func (l serverLog) open(r runner) (*os.File, int64, error) {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("pgcluster: open server log: %w", err)
	}
	if err := r.chown(l.path); err != nil {
		f.Close()
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("pgcluster: open server log: %w", err)
	}
	return f, fi.Size(), nil
}

// append writes b (e.g. initdb's output) to the log.
func (l serverLog) append(r runner, b []byte) error {
	f, _, err := l.open(r)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgcluster: write server log: %w", err)
	}
	return nil
}

// since returns what was logged from offset on (at most tailBytes, the end).
func (l serverLog) since(offset int64) string {
	f, err := os.Open(l.path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size()-offset > tailBytes {
		offset = fi.Size() - tailBytes
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// tail returns the last tailLines lines logged from offset on, formatted
// for an error message: "log /x/postgres.log: <lines>".
func (l serverLog) tail(offset int64) string {
	return l.describe(lastLines(l.since(offset), tailLines))
}

func (l serverLog) describe(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		if _, err := os.Stat(l.path); errors.Is(err, fs.ErrNotExist) {
			return "no server log"
		}
		return "server log " + l.path + " is empty"
	}
	return "server log " + l.path + ":\n" + text
}

func lastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimRight([]byte(s), "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
