package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/projector"
)

func newProjectorRebuildCmd(e *env) *cobra.Command {
	var batch int
	var abort bool
	cmd := &cobra.Command{
		Use:   "rebuild NAME",
		Short: "Rebuild a read model into shadow tables while the live ones serve, then swap them in",
		Long: `Rebuild rebuilds a read model from the start of the log into shadow tables while the live
ones serve, then swaps them in atomically. It shows position, events/s and ETA on stderr
(rewritten in place on a terminal, a line every 2 s otherwise). An interrupted rebuild
resumes when run again; --abort drops it instead. It exits 5 when there is no such
projection, 2 for the Merkle log (log), which is never rebuilt, and needs ledger_admin.`,
		Example: `  execledger projector rebuild requests
  execledger projector rebuild runs --abort`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProjectorRebuild(cmd.Context(), e, args[0], batch, abort)
		},
	}
	cmd.Flags().IntVar(&batch, "batch", projector.RebuildBatch, "events applied per transaction")
	cmd.Flags().BoolVar(&abort, "abort", false, "drop the shadow tables of an interrupted rebuild instead of resuming it")
	e.configFlag(cmd)
	return cmd
}

// runProjectorRebuild: execledger projector rebuild NAME [--batch N] [--abort].
func runProjectorRebuild(ctx context.Context, e *env, name string, batch int, abort bool) error {
	if batch < 1 || batch > 1_000_000 {
		return fail(exitUsage, "--batch %d is not between 1 and 1000000", batch)
	}
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	if abort {
		dropped, err := projector.AbortRebuild(ctx, pool, name)
		if err != nil {
			return fail(exitError, "%v", err)
		}
		if dropped {
			fmt.Fprintf(e.io.out, "rebuild of %s aborted: its shadow tables are dropped\n", name)
		} else {
			fmt.Fprintf(e.io.out, "no rebuild of %s was in progress\n", name)
		}
		return nil
	}
	pr := newProgressPrinter(e.io.err)
	err = projector.Rebuild(ctx, pool, name, batch, pr.print)
	pr.done()
	switch {
	case errors.Is(err, projector.ErrUnknownProjection):
		return fail(exitNotFound, "no projection %s: `execledger projector status` lists them", name)
	case errors.Is(err, projector.ErrMerkleLog):
		return merkleLogError(name)
	case err != nil && ctx.Err() != nil:
		return fail(exitError, "rebuild of %s interrupted at position %d; the live tables are untouched. Run it again to resume, or with --abort to drop what it built",
			name, pr.last.Position)
	case err != nil:
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "%s rebuilt from the log: %d events, %d rows, swapped in at position %d\n",
		name, pr.last.Passed, pr.last.Rows, pr.last.Position)
	return nil
}

// progressPrinter shows a rebuild's progress: one line rewritten in place
// on a terminal, else a line every few seconds.
type progressPrinter struct {
	w        io.Writer
	terminal bool
	printed  time.Time
	last     projector.Progress
	width    int
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	p := &progressPrinter{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progressPrinter) print(pr projector.Progress) {
	if p.last.Name == "" && pr.Resumed {
		fmt.Fprintf(p.w, "rebuild %s: resuming the rebuild an earlier run left\n", pr.Name)
	}
	p.last = pr
	if pr.Swapped {
		return
	}
	if !p.terminal && time.Since(p.printed) < 2*time.Second {
		return
	}
	p.printed = time.Now()
	line := fmt.Sprintf("rebuild %s: position %d of %d, %d events, %.0f events/s, ETA %s",
		pr.Name, pr.Position, pr.Head, pr.Passed, pr.Rate, pr.ETA.Round(time.Second))
	if pr.Resumed {
		line += " (resumed)"
	}
	if p.terminal {
		pad := max(p.width-len(line), 0)
		p.width = len(line)
		fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progressPrinter) done() {
	if p.terminal && p.width > 0 {
		fmt.Fprintln(p.w)
	}
}

func newProjectorVerifyCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [NAME]",
		Short: "Rebuild into scratch tables and compare every row with the live tables; exit 3 when one differs",
		Long: `Verify rebuilds each read model (or NAME's) into temporary tables and compares every row
with the live tables: a table of projection, table, rows and ok or DIFFERS: with the first
differing row. The Merkle log (projection log) is not rebuilt from the events: it is listed
as skipped, and ` + "`execledger verify --db`" + ` checks it. It exits 3 when a table differs, 5 when
there is no such projection, 2 when NAME is log, and needs ledger_admin or ledger_auditor.`,
		Example: `  execledger projector verify
  execledger projector verify requests --json`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProjectorVerify(cmd.Context(), e, args)
		},
	}
	e.jsonFlag(cmd, "print a JSON array, one object per table")
	e.configFlag(cmd)
	return cmd
}

// merkleLogError refuses to rebuild or verify the Merkle log by name.
func merkleLogError(name string) error {
	return fail(exitUsage, "%s is the Merkle log, which signed checkpoints commit to: it is never rebuilt from the events; `execledger verify --db` checks it from the first leaf", name)
}

// runProjectorVerify: execledger projector verify [NAME] [--json]. Exit 0
// when every table equals its rebuild, exitNotOK when one differs.
func runProjectorVerify(ctx context.Context, e *env, pos []string) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	checks, err := projector.Verify(ctx, pool, pos...)
	switch {
	case errors.Is(err, projector.ErrUnknownProjection):
		return fail(exitNotFound, "no projection %s: `execledger projector status` lists them", pos[0])
	case errors.Is(err, projector.ErrMerkleLog):
		return merkleLogError(pos[0])
	case err != nil:
		return fail(exitError, "%v", err)
	}
	code := exitOK
	for _, c := range checks {
		if !c.OK() {
			code = exitNotOK
		}
	}
	if e.json {
		if err := printJSON(e, checks); err != nil {
			return err
		}
		return exitCode(code)
	}
	tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECTION\tTABLE\tLIVE ROWS\tREBUILT ROWS\tRESULT")
	for _, c := range checks {
		if c.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\tskipped: %s\n", c.Projection, c.Table, c.Skipped)
			continue
		}
		result := "ok"
		if !c.OK() {
			result = "DIFFERS: " + c.FirstDifference
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", c.Projection, c.Table, c.LiveRows, c.RebuiltRows, result)
	}
	if err := tw.Flush(); err != nil {
		return fail(exitError, "%v", err)
	}
	return exitCode(code)
}
