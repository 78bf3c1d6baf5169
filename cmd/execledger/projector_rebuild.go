package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/execledger/execledger/projector"
)

// runProjectorRebuild: execledger projector rebuild NAME [--batch N] [--abort].
func runProjectorRebuild(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "projector rebuild")
	batch := fs.Int("batch", projector.RebuildBatch, "events applied per transaction")
	abort := fs.Bool("abort", false, "drop the shadow tables of an interrupted rebuild instead of resuming it")
	pos, code, ok := e.parseArgs(fs, args, 1, "execledger projector rebuild NAME [--batch N] [--abort]")
	if !ok {
		return code
	}
	if *batch < 1 || *batch > 1_000_000 {
		return e.fail(exitUsage, "--batch %d is not between 1 and 1000000", *batch)
	}
	name := pos[0]
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	if *abort {
		dropped, err := projector.AbortRebuild(ctx, pool, name)
		if err != nil {
			return e.fail(exitError, "%v", err)
		}
		if dropped {
			fmt.Fprintf(e.io.out, "rebuild of %s aborted: its shadow tables are dropped\n", name)
		} else {
			fmt.Fprintf(e.io.out, "no rebuild of %s was in progress\n", name)
		}
		return exitOK
	}
	pr := newProgressPrinter(e.io.err)
	err = projector.Rebuild(ctx, pool, name, *batch, pr.print)
	pr.done()
	switch {
	case errors.Is(err, projector.ErrUnknownProjection):
		return e.fail(exitNotFound, "no projection %s: `execledger projector status` lists them", name)
	case err != nil && ctx.Err() != nil:
		return e.fail(exitError, "rebuild of %s interrupted at position %d; the live tables are untouched. Run it again to resume, or with --abort to drop what it built",
			name, pr.last.Position)
	case err != nil:
		return e.fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "%s rebuilt from the log: %d events, %d rows, swapped in at position %d\n",
		name, pr.last.Passed, pr.last.Rows, pr.last.Position)
	return exitOK
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

// runProjectorVerify: execledger projector verify [NAME] [--json]. Exit 0
// when every table equals its rebuild, exitNotOK when one differs.
func runProjectorVerify(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "projector verify")
	asJSON := fs.Bool("json", false, "print a JSON array, one object per table")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) > 1 {
		return e.fail(exitUsage, "usage: execledger projector verify [NAME] [--json]")
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	checks, err := projector.Verify(ctx, pool, pos...)
	switch {
	case errors.Is(err, projector.ErrUnknownProjection):
		return e.fail(exitNotFound, "no projection %s: `execledger projector status` lists them", pos[0])
	case err != nil:
		return e.fail(exitError, "%v", err)
	}
	code := exitOK
	for _, c := range checks {
		if !c.OK() {
			code = exitNotOK
		}
	}
	if *asJSON {
		if c := printJSON(e, checks); c != exitOK {
			return c
		}
		return code
	}
	tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECTION\tTABLE\tLIVE ROWS\tREBUILT ROWS\tRESULT")
	for _, c := range checks {
		result := "ok"
		if !c.OK() {
			result = "DIFFERS: " + c.FirstDifference
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", c.Projection, c.Table, c.LiveRows, c.RebuiltRows, result)
	}
	if err := tw.Flush(); err != nil {
		return e.fail(exitError, "%v", err)
	}
	return code
}
