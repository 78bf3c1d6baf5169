package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

// exportFlags are export's flags.
type exportFlags struct {
	request, principal, since, until, out string
	wait                                  time.Duration
	force                                 bool
}

func newExportCmd(e *env) *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export --out FILE",
		Short: "Write an export bundle of the log, or of some requests, proved against the newest clean published checkpoint",
		Long: `Export writes a bundle (docs/bundle.md) of the whole log or of whole request streams, proved
against the newest published checkpoint, for execledger verify to check offline. It needs a
ledger_auditor login.

The bundle holds the sealed record only. When ledger.events also holds events below the sealed
horizon that are not in the Merkle log (written behind the sealer: fault unsealed_event), export
still writes the bundle, names them on stderr and exits 3.`,
		Example: `  execledger export --out ledger.bundle
  execledger export --principal alice --since 7d --out alice.bundle
  execledger export --request 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --out one.bundle --force`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExport(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.request, "request", "", "only this request (its `ID`)")
	fl.StringVar(&f.principal, "principal", "", "only this principal's requests")
	fl.StringVar(&f.since, "since", "", "only requests submitted at or after this `TIME`: "+timeFlagHelp)
	fl.StringVar(&f.until, "until", "", "only requests submitted before this `TIME` (as --since)")
	fl.DurationVar(&f.wait, "wait", export.DefaultWait, "how long to wait for a clean published checkpoint when the newest is not")
	fl.StringVar(&f.out, "out", "", "the bundle `FILE` to write")
	fl.BoolVar(&f.force, "force", false, "overwrite FILE if it exists")
	e.configFlag(cmd)
	return cmd
}

// runExport writes an export bundle (internal/bundle) of the whole log or
// of some requests, for `execledger verify` to check offline.
// runExport writes an export bundle (internal/bundle) of the whole log or
// of some requests, for `execledger verify` to check offline.
func runExport(ctx context.Context, e *env, f exportFlags) error {
	scope, err := exportScope(time.Now(), f.request, f.principal, f.since, f.until)
	if err != nil {
		return fail(exitUsage, "export: %v", err)
	}
	if f.out == "" || f.wait < 0 {
		return fail(exitUsage, "export needs --out FILE (and --wait ≥ 0)")
	}
	if _, err := os.Lstat(f.out); err == nil && !f.force {
		return fail(exitError, "export: %s exists (--force overwrites it)", f.out)
	}
	_, pool, err := e.connectReader(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	bar := newProgressLine(e.io.err, "exported")
	opts := export.Options{Scope: scope, Wait: f.wait, Progress: bar.update}
	if f.wait == 0 {
		opts.Wait = -1
	}
	var sum export.Summary
	n, err := writeFileAtomic(f.out, f.force, func(w io.Writer) error {
		sum, err = export.Export(ctx, pool, opts, bundle.NewWriter(w))
		return err
	})
	bar.finish()
	switch {
	case errors.Is(err, export.ErrNoRequest):
		return fail(exitNotFound, "export: no request %s", f.request)
	case err != nil:
		return fail(exitError, "%v", err)
	}
	printExportSummary(e.io.out, sum, f.out, n)
	if sum.Events == 0 {
		fmt.Fprintf(e.io.err, "export: WARNING: no request matched: the bundle holds no events, and execledger verify will call it empty "+
			"(a duration counts back from now: --since 24h is the last day, --until 24h before it)\n")
	}
	if len(sum.Forged) > 0 {
		fmt.Fprintf(e.io.err, "export: WARNING: ledger.events holds events below the sealed horizon that are not in the Merkle log "+
			"(fault unsealed_event); they are not part of the record and not in the bundle:\n")
		for _, u := range sum.Forged {
			fmt.Fprintf(e.io.err, "  %s version %d (%s) at position %d, transaction %d: %s\n", u.Stream, u.Version, u.Type, u.Position, u.TxID, u.Reason)
		}
		return exitCode(exitNotOK)
	}
	return nil
}

// exportScope checks export's filters and makes the bundle's scope.
func exportScope(now time.Time, request, principal, since, until string) (bundle.Scope, error) {
	var s bundle.Scope
	if request != "" {
		if principal != "" || since != "" || until != "" {
			return s, errors.New("--request takes no other filter")
		}
		id, err := uuid.Parse(request)
		if err != nil {
			return s, fmt.Errorf("--request: %q is not a request id (a UUID)", request)
		}
		s.Request = id.String()
		return s, nil
	}
	from, to, err := timeRange(since, until, now)
	if err != nil {
		return s, err
	}
	utc := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	s.Since, s.Until = utc(from), utc(to)
	s.Principal = principal
	s.Full = principal == "" && s.Since == nil && s.Until == nil
	return s, nil
}

// scopeText says what a bundle of scope s holds.
func scopeText(s bundle.Scope) string {
	switch {
	case s.Request != "":
		return "request " + s.Request
	case s.Full:
		return "the whole log"
	}
	var parts []string
	if s.Principal != "" {
		parts = append(parts, "principal "+s.Principal)
	}
	if s.Since != nil {
		parts = append(parts, "submitted from "+s.Since.Format(time.RFC3339))
	}
	if s.Until != nil {
		parts = append(parts, "submitted before "+s.Until.Format(time.RFC3339))
	}
	return "the requests of " + strings.Join(parts, ", ")
}

func printExportSummary(w io.Writer, sum export.Summary, out string, bytes int64) {
	cp := sum.Choice.Checkpoint
	fmt.Fprintf(w, "exported %s: %d events, %d requests, %d checkpoints\n", scopeText(sum.Scope), sum.Events, sum.Requests, sum.Checkpoints)
	fmt.Fprintf(w, "checkpoint:  %d %s (origin %s)\n", cp.Size, base64.StdEncoding.EncodeToString(cp.Root), cp.Origin)
	if sum.Choice.Unclean != nil && sum.Choice.Newest > cp.Size {
		fmt.Fprintf(w, "             not the newest published (%d): %s\n", sum.Choice.Newest, sum.Choice.Unclean)
	}
	if sum.Unsealed > 0 {
		fmt.Fprintf(w, "not sealed:  %d events of the %d requests selected are not under the checkpoint yet, and not in the bundle\n",
			sum.Unsealed, sum.Selected)
	}
	fmt.Fprintf(w, "out:         %s (%d bytes)\n", out, bytes)
}

// writeFileAtomic writes path through write: into a temporary file in the
// same directory, synced, then moved to path; an existing path is
// replaced only with force. Nothing is left behind on an error. It
// returns the bytes written.
func writeFileAtomic(path string, force bool, write func(io.Writer) error) (n int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	cw := &countingWriter{w: tmp}
	bw := bufio.NewWriterSize(cw, 1<<20)
	if err = write(bw); err != nil {
		return 0, err
	}
	if err = bw.Flush(); err != nil {
		return 0, err
	}
	if err = tmp.Sync(); err != nil {
		return 0, err
	}
	if err = tmp.Close(); err != nil {
		return 0, err
	}
	if force {
		return cw.n, os.Rename(tmp.Name(), path)
	}
	// A link fails if path has appeared since: never overwrite it.
	if err = os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, fmt.Errorf("%s exists (--force overwrites it)", path)
		}
		return 0, err
	}
	return cw.n, os.Remove(tmp.Name())
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// progressLine reports a long command's progress on stderr: a bar
// redrawn in place on a terminal, else a line every few seconds.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	verb  string
	tty   bool
	start time.Time
	last  time.Time
	drawn bool
}

const progressEvery = 5 * time.Second

func newProgressLine(w io.Writer, verb string) *progressLine {
	p := &progressLine{w: w, verb: verb, start: time.Now()}
	p.last = p.start
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progressLine) update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.tty {
		if now.Sub(p.last) < 100*time.Millisecond && (total <= 0 || done < total) {
			return
		}
		p.last, p.drawn = now, true
		line := p.count(done, total)
		if total > 0 {
			line = p.bar(done, total) + " " + line
		}
		fmt.Fprintf(p.w, "\r%s", line)
		return
	}
	if now.Sub(p.last) >= progressEvery {
		p.last = now
		fmt.Fprintln(p.w, p.count(done, total))
	}
}

func (p *progressLine) count(done, total int64) string {
	rate := float64(done) / max(time.Since(p.start).Seconds(), 1e-3)
	if total <= 0 {
		return fmt.Sprintf("%s %d events (%.0f/s)", p.verb, done, rate)
	}
	return fmt.Sprintf("%s %d/%d events (%.0f/s)", p.verb, done, total, rate)
}

func (p *progressLine) bar(done, total int64) string {
	const width = 30
	filled := int(min(done, total) * width / total)
	return "[" + strings.Repeat("=", filled) + strings.Repeat(" ", width-filled) + "]"
}

// finish ends the bar's line.
func (p *progressLine) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// checkpointText formats a checkpoint as "SIZE ROOT".
func checkpointText(c ledger.Checkpoint) string {
	return fmt.Sprintf("%d %s", c.Size, base64.StdEncoding.EncodeToString(c.Root))
}
