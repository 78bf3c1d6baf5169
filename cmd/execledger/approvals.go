package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/ledger"
)

// newApprovalsCmd lists what waits for approval with the input each
// request asks to run: ledger.awaiting_approval, which approvers may call
// although they read neither the log nor the queue.
func newApprovalsCmd(e *env) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List the requests that wait for approval, with the exact input and its digest",
		Long: `Approvals prints each request in awaiting_approval, oldest first: who submitted it, the tool, the
input as recorded in tool.requested (redacted as stored) and the input digest that
execledger approve --input-digest binds an approval to. It needs ledger_approver (or
ledger_auditor or ledger_admin, who may read the log anyway); an approver sees the input of a
request only while it waits for approval.`,
		Example: `  execledger approvals
  execledger approvals --json | jq -r '.[] | "\(.id) \(.input_digest)"'
  execledger approve 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --input-digest sha256:9f86d0…`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fail(exitUsage, "approvals: --limit: %d is negative (0 means no limit)", limit)
			}
			return withReader(cmd.Context(), e, func(c *ledger.Client, _ *pgxpool.Pool) error {
				return listApprovals(cmd.Context(), e, c, limit)
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 200, limitFlagHelp("requests, the oldest", 200))
	e.jsonFlag(cmd, "print a JSON array")
	e.configFlag(cmd)
	return cmd
}

func listApprovals(ctx context.Context, e *env, c *ledger.Client, limit int) error {
	// 0 is no limit: as many as ledger.awaiting_approval returns at once,
	// and a note when that many wait.
	ask := limit
	if ask == 0 || ask > ledger.MaxAwaitingLimit {
		ask = ledger.MaxAwaitingLimit
	}
	rows, err := c.AwaitingApproval(ctx, ask)
	if errors.Is(err, ledger.ErrNotPermitted) {
		return fail(exitError, "%v (listing what waits for approval needs ledger_approver, ledger_auditor or ledger_admin; "+
			"a submitter sees its own waiting requests with execledger requests list --state awaiting_approval)", err)
	}
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if len(rows) == ledger.MaxAwaitingLimit && limit != ledger.MaxAwaitingLimit {
		fmt.Fprintf(e.io.err, "note: the oldest %d requests that wait are listed; ledger.awaiting_approval returns at most that many at once, and more may wait\n",
			ledger.MaxAwaitingLimit)
	}
	if e.json {
		if rows == nil {
			rows = []ledger.Awaiting{}
		}
		return printJSON(e, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.io.err, "nothing waits for approval")
		return nil
	}
	for i, a := range rows {
		if i > 0 {
			fmt.Fprintln(e.io.out)
		}
		printAwaiting(e.io.out, a)
	}
	return nil
}

// printAwaiting prints one request waiting for approval: what it asks,
// its input and the command that approves exactly that input.
func printAwaiting(w io.Writer, a ledger.Awaiting) {
	fmt.Fprintf(w, "%s  %s  principal %s  run %s  submitted %s\n", a.ID, a.Tool, a.Principal, orDash(a.RunID),
		a.SubmittedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  Input digest: %s\n", a.InputDigest)
	fmt.Fprintf(w, "  Input (as recorded): %s\n", indentJSON(a.Input, "  "))
	fmt.Fprintf(w, "  Approve:      execledger approve %s --input-digest %s\n", a.ID, a.InputDigest)
	fmt.Fprintf(w, "  Deny:         execledger deny %s --note REASON\n", a.ID)
}

// indentJSON is raw indented for a terminal, each line after the first
// starting with prefix; raw itself when it is not JSON.
func indentJSON(raw []byte, prefix string) string {
	if len(raw) == 0 {
		return "(not recorded)"
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, prefix, "  ") != nil {
		return string(raw)
	}
	return b.String()
}
