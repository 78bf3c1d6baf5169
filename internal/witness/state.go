package witness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/transparency-dev/formats/log"
)

// The state file holds the last checkpoint the witness accepted: the
// log's signed note (C2SP tlog-checkpoint) exactly as the log stored it.
// Missing or empty, the witness trusts the first checkpoint it sees; once
// written it is never given up: a state the log key does not verify
// stops the witness rather than sending it back to trust on first use.

// readState returns the state's checkpoint, nil when there is none.
func (w *Witness) readState() (*log.Checkpoint, error) {
	b, err := os.ReadFile(w.state)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(b) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the state: %w", err)
	}
	cp, _, _, err := log.ParseCheckpoint(b, w.logKey.Name(), w.logKey)
	if err != nil {
		return nil, fmt.Errorf("the state file %s holds no checkpoint of %s signed by the log key (%v); "+
			"the witness does not fall back to trust on first use: give the log key it was written with, or move the file aside to start over",
			w.state, w.logKey.Name(), err)
	}
	return cp, nil
}

// stagedFile is a file's new content, written and synced to a temporary
// file beside it, that commit renames into place.
type stagedFile struct {
	path, tmp string
}

func stageFile(path string, data []byte) (*stagedFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("write the state: %w", err)
	}
	st := &stagedFile{path: path, tmp: f.Name()}
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.abort()
		return nil, fmt.Errorf("write the state: %w", err)
	}
	return st, nil
}

// commit renames the staged file into place and syncs the directory.
func (st *stagedFile) commit() error {
	if err := os.Rename(st.tmp, st.path); err != nil {
		return fmt.Errorf("write the state: %w", err)
	}
	st.tmp = ""
	d, err := os.Open(filepath.Dir(st.path))
	if err != nil {
		return fmt.Errorf("write the state: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the state: sync %s: %w", filepath.Dir(st.path), err)
	}
	return nil
}

// abort removes the staged file unless it was committed.
func (st *stagedFile) abort() {
	if st.tmp != "" {
		_ = os.Remove(st.tmp)
		st.tmp = ""
	}
}
