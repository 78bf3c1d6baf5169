package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/execledger/execledger/projector"
)

// projectorCommands are the subcommands of `execledger projector`. One
// whose run is nil is documented but not built yet.
func projectorCommands() []command {
	return []command{
		{"status", "[--json]", "every projection: mode, checkpoint, lag, state, last error", runProjectorStatus},
		{"retry", "NAME [--note TEXT]", "resume a failed projection at the event it failed on, recording projection.retried", runProjectorRetry},
		{"rebuild", "NAME [--batch N] [--abort]", "rebuild a read model into shadow tables from the start of the log while the live ones serve, then swap them in atomically; interrupted, it resumes", runProjectorRebuild},
		{"verify", "[NAME] [--json]", "rebuild into scratch tables and compare every row with the live tables; exit 3 when one differs", runProjectorVerify},
	}
}

func runProjector(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		projectorUsage(e.io.err)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range projectorCommands() {
		if c.name != args[0] {
			continue
		}
		if c.run == nil {
			return e.fail(exitError, "projector %s is not available in this version", c.name)
		}
		return c.run(ctx, e, args[1:])
	}
	fmt.Fprintf(e.io.err, "execledger: unknown projector command %q\n\n", args[0])
	projectorUsage(e.io.err)
	return exitUsage
}

func projectorUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: execledger projector COMMAND [ARGS]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range projectorCommands() {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.args, c.summary)
	}
}

// projectionStatus is one line of projector status --json.
type projectionStatus struct {
	Name          string      `json:"name"`
	Mode          string      `json:"mode"` // inline or async
	Checkpoint    cursorJSON  `json:"checkpoint"`
	State         string      `json:"state"`
	EventsBehind  int64       `json:"events_behind"`
	SecondsBehind float64     `json:"seconds_behind"`
	AppliedTotal  int64       `json:"applied_total"`
	FailedAt      *cursorJSON `json:"failed_at"`
	FailedType    *string     `json:"failed_type"`
	LastError     *string     `json:"last_error"`
	UpdatedAt     time.Time   `json:"updated_at"`
}

// cursorJSON is a read_all cursor; tx_id as a string, as xid8 is text in SQL.
type cursorJSON struct {
	TxID     string `json:"tx_id"`
	Position int64  `json:"position"`
}

func toProjectionStatus(s projector.Status) projectionStatus {
	p := projectionStatus{
		Name: s.Name, Mode: s.Mode, State: s.State,
		Checkpoint:   cursorJSON{fmt.Sprint(s.Checkpoint.TxID), s.Checkpoint.Position},
		EventsBehind: s.EventsBehind, SecondsBehind: s.SecondsBehind, AppliedTotal: s.AppliedTotal,
		UpdatedAt: s.UpdatedAt,
	}
	if s.FailedAt != nil {
		p.FailedAt = &cursorJSON{fmt.Sprint(s.FailedAt.TxID), s.FailedAt.Position}
	}
	if s.FailedType != "" {
		p.FailedType = &s.FailedType
	}
	if s.LastError != "" {
		p.LastError = &s.LastError
	}
	return p
}

func runProjectorStatus(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "projector status")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if _, code, ok := e.parseArgs(fs, args, 0, "execledger projector status [--json]"); !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	statuses, err := projector.Statuses(ctx, pool)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	out := make([]projectionStatus, 0, len(statuses))
	for _, s := range statuses {
		out = append(out, toProjectionStatus(s))
	}
	if *asJSON {
		return printJSON(e, out)
	}
	return printProjectionStatus(e, out)
}

func printProjectionStatus(e *env, statuses []projectionStatus) int {
	tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMODE\tCHECKPOINT\tEVENTS BEHIND\tSECONDS BEHIND\tSTATE\tLAST ERROR")
	for _, s := range statuses {
		lastError := "-"
		if s.LastError != nil {
			lastError = strings.Join(strings.Fields(*s.LastError), " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%s\t%s\n", s.Name, s.Mode, s.Checkpoint.Position, s.EventsBehind,
			s.SecondsBehind, s.State, lastError)
	}
	if err := tw.Flush(); err != nil {
		return e.fail(exitError, "%v", err)
	}
	return exitOK
}

func runProjectorRetry(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "projector retry")
	note := fs.String("note", "", "why it is retried (recorded in projection.retried)")
	pos, code, ok := e.parseArgs(fs, args, 1, "execledger projector retry NAME [--note TEXT]")
	if !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	err = projector.RetryProjection(ctx, pool, pos[0], *note)
	switch {
	case errors.Is(err, projector.ErrUnknownProjection):
		return e.fail(exitNotFound, "no projection %q", pos[0])
	case errors.Is(err, projector.ErrNotFailed):
		return e.fail(exitNotFailed, "projection %s is not failed: nothing to retry", pos[0])
	case err != nil:
		return e.fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "projection %s retried: its runner applies the failed event again\n", pos[0])
	return exitOK
}
