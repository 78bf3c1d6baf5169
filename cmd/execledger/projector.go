package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/projector"
)

func newProjectorCmd(e *env) *cobra.Command {
	return newGroupCmd("projector", "The projections: checkpoints, lag and failures; retry, rebuild and verify the read models",
		`Projector shows the projections that keep the read models, retries a failed one, and
rebuilds or verifies a read model from the log.`,
		`  execledger projector status
  execledger projector verify requests`,
		newProjectorStatusCmd(e), newProjectorRetryCmd(e), newProjectorRebuildCmd(e), newProjectorVerifyCmd(e))
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

func newProjectorStatusCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Every projection: mode, checkpoint, lag, state, last error",
		Long: `Status prints every projection: name, mode, checkpoint position, events and seconds behind,
state and last error. It needs a role that reads ledger.projections (executor, auditor,
admin, reader).`,
		Example: `  execledger projector status
  execledger projector status --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProjectorStatus(cmd.Context(), e)
		},
	}
	e.jsonFlag(cmd, "print a JSON array")
	e.configFlag(cmd)
	return cmd
}

func runProjectorStatus(ctx context.Context, e *env) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	statuses, err := projector.Statuses(ctx, pool)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	out := make([]projectionStatus, 0, len(statuses))
	for _, s := range statuses {
		out = append(out, toProjectionStatus(s))
	}
	if e.json {
		return printJSON(e, out)
	}
	return printProjectionStatus(e, out)
}

func printProjectionStatus(e *env, statuses []projectionStatus) error {
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
		return fail(exitError, "%v", err)
	}
	return nil
}

func newProjectorRetryCmd(e *env) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "retry NAME",
		Short: "Resume a failed projection at the event it failed on, recording projection.retried",
		Long: `Retry clears a failed projection: its runner applies the event it failed on again, and
projection.retried records the note. It exits 5 when there is no such projection, 6 when the
projection is not failed. It needs ledger_admin (or ledger_executor).`,
		Example: `  execledger projector retry requests --note "payload fixed by hand"`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProjectorRetry(cmd.Context(), e, args[0], note)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why it is retried (recorded in projection.retried)")
	e.configFlag(cmd)
	return cmd
}

func runProjectorRetry(ctx context.Context, e *env, name, note string) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	err = projector.RetryProjection(ctx, pool, name, note)
	switch {
	case errors.Is(err, projector.ErrUnknownProjection):
		return fail(exitNotFound, "no projection %q", name)
	case errors.Is(err, projector.ErrNotFailed):
		return fail(exitNotFailed, "projection %s is not failed: nothing to retry", name)
	case err != nil:
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "projection %s retried: its runner applies the failed event again\n", name)
	return nil
}
