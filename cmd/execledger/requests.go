package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/readmodel"
	"github.com/execledger/execledger/ledger"
)

// The operator's request commands: requests list|show, cancel, approve and
// deny. Each runs as the login of DATABASE_URL and sees and may do what that
// login's roles allow (README, "Roles"): a submitter lists and shows its own
// principal's requests and cancels them, an approver approves or denies
// other principals' requests, auditors and administrators see every
// request, and the event trail needs a role that reads the log.

func newRequestsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "requests",
		Short: "List requests, or show one with its events, decisions and attestation",
		Example: `  execledger requests list --state failed --limit 20
  execledger requests show 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(newRequestsListCmd(e), newRequestsShowCmd(e))
	return cmd
}

func newRequestsListCmd(e *env) *cobra.Command {
	var (
		p            ledger.ListParams
		state        string
		since, until string
		limit        int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the requests the login may see, newest first",
		Long: `List prints one line per request: id, state, tool, principal, run, when it was submitted and
its error kind. A submitter sees its own principal's requests; auditors and administrators see all.

--since (inclusive) and --until (exclusive) take an RFC 3339 time, a date (midnight UTC) or a
duration ago (90m, 24h, 7d: --since 24h is the last day), as in audit and export. --limit 0 lists
every request that matches.`,
		Example: `  execledger requests list
  execledger requests list --state awaiting_approval
  execledger requests list --principal billing --since 24h --json
  execledger requests list --since 2026-11-24 --until 2026-11-25 --limit 0`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.State = ledger.State(state)
			if p.State != "" && !p.State.Valid() {
				return fail(exitUsage, "--state %q is not a state (%s)", state, stateNames())
			}
			var err error
			if p.Since, p.Until, err = timeRange(since, until, time.Now()); err != nil {
				return fail(exitUsage, "requests list: %v", err)
			}
			if limit < 0 {
				return fail(exitUsage, "requests list: --limit: %d is negative (0 means no limit)", limit)
			}
			return runRequestsList(cmd.Context(), e, p, limit)
		},
	}
	f := cmd.Flags()
	f.StringVar(&state, "state", "", "only requests in this `STATE` ("+stateNames()+")")
	f.StringVar(&p.Principal, "principal", "", "only this `PRINCIPAL`'s requests")
	f.StringVar(&p.Tool, "tool", "", "only requests of this `TOOL`")
	f.StringVar(&p.RunID, "run", "", "only requests of this `RUN` id")
	f.StringVar(&since, "since", "", "only requests submitted at or after `TIME`: "+timeFlagHelp)
	f.StringVar(&until, "until", "", "only requests submitted before `TIME` (as --since)")
	f.IntVar(&limit, "limit", 50, limitFlagHelp("requests, the newest", 50))
	states := make([]string, len(ledger.States))
	for i, s := range ledger.States {
		states[i] = string(s)
	}
	enumFlag(cmd, "state", states...)
	e.jsonFlag(cmd, "print a JSON array")
	e.configFlag(cmd)
	return cmd
}

func stateNames() string {
	var s []string
	for _, st := range ledger.States {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

func runRequestsList(ctx context.Context, e *env, p ledger.ListParams, limit int) error {
	return withReader(ctx, e, func(client *ledger.Client, _ *pgxpool.Pool) error {
		return listRequests(ctx, e, client, p, limit)
	})
}

// listAll reads up to limit requests (0: all) that p selects, a page of
// at most ledger.MaxListLimit at a time, each after the last one read.
func listAll(ctx context.Context, client *ledger.Client, p ledger.ListParams, limit int) ([]ledger.Request, error) {
	var out []ledger.Request
	for {
		p.Limit = ledger.MaxListLimit
		if limit > 0 {
			p.Limit = min(limit-len(out), ledger.MaxListLimit)
		}
		page, err := client.List(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < p.Limit || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		last := page[len(page)-1]
		p.After = &ledger.ListCursor{SubmittedAt: last.SubmittedAt, ID: last.ID}
	}
}

func listRequests(ctx context.Context, e *env, client *ledger.Client, p ledger.ListParams, limit int) error {
	reqs, err := listAll(ctx, client, p, limit)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if e.json {
		if reqs == nil {
			reqs = []ledger.Request{}
		}
		return printJSON(e, reqs)
	}
	if len(reqs) == 0 {
		fmt.Fprintln(e.io.err, "no requests")
		return nil
	}
	tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTOOL\tPRINCIPAL\tRUN\tSUBMITTED\tERROR")
	for _, r := range reqs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.State, r.Tool, r.Principal, orDash(r.RunID),
			r.SubmittedAt.UTC().Format(time.RFC3339), orDash((*string)(r.ErrorKind)))
	}
	return tw.Flush()
}

func newRequestsShowCmd(e *env) *cobra.Command {
	var envelope string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Describe a request: its state, the decisions and the policies behind them, the attestation and the event trail",
		Long: `Show describes one request the way kubectl describe does: the request, every authorization
decision with its stage, reason and determining policies, approvals, the outcome, the attestation
(digest, signing key, statement), and the request's events in order. The decisions come from the
audit trail, which a submitter reads for its own principal; the events and the attestation's
statement come from the log, which needs ledger_auditor, ledger_executor or ledger_admin. A request
that waits for approval shows, to an approver, the input an approval decides and its digest. What
the login may not read is left out, and show says what and why.`,
		Example: `  execledger requests show 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80
  execledger requests show 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --json
  execledger requests show 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --envelope att.json && execledger verify att.json --attest-key attest.key.pub`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fail(exitUsage, "%q is not a request id (a UUID)", args[0])
			}
			return runRequestsShow(cmd.Context(), e, id, envelope)
		},
	}
	cmd.Flags().StringVar(&envelope, "envelope", "", "also write the attestation's DSSE envelope to `FILE`, for execledger verify")
	e.jsonFlag(cmd, "print one JSON object")
	e.configFlag(cmd)
	return cmd
}

func runRequestsShow(ctx context.Context, e *env, id uuid.UUID, envelope string) error {
	return withReader(ctx, e, func(client *ledger.Client, pool *pgxpool.Pool) error {
		return showRequest(ctx, e, client, pool, id, envelope)
	})
}

// describedJSON is requests show --json: the description and the run's
// budget.
type describedJSON struct {
	readmodel.Description
	RunBudget *runBudgetView `json:"run_budget,omitempty"`
}

func showRequest(ctx context.Context, e *env, client *ledger.Client, pool *pgxpool.Pool, id uuid.UUID, envelope string) error {
	d, err := readmodel.Describe(ctx, client, pool, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return fail(exitNotFound, "no request %s (or none this login may see)", id)
	}
	if errors.Is(err, ledger.ErrNotPermitted) {
		return fail(exitError, "%v (this login may read no requests: a submitter reads its own principal's, "+
			"ledger_approver, ledger_auditor and ledger_admin every request; ledger_reader reads only the quota and health read models)", err)
	}
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if envelope != "" {
		if d.Attestation == nil || d.Attestation.Envelope == nil {
			return fail(exitNotFound, "request %s has no attestation this login may read", id)
		}
		if err := os.WriteFile(envelope, d.Attestation.Envelope, 0o644); err != nil {
			return fail(exitError, "%v", err)
		}
	}
	budget := readBudget(ctx, client, d.Request, e.defaultMaxCalls())
	if e.json {
		return printJSON(e, describedJSON{d, budget})
	}
	return printDescribed(e.io.out, d, budget)
}

func printDescribed(w io.Writer, d readmodel.Description, budget *runBudgetView) error {
	r := d.Request
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "ID:\t%s\n", r.ID)
	fmt.Fprintf(tw, "Principal:\t%s\n", r.Principal)
	fmt.Fprintf(tw, "Tool:\t%s\n", r.Tool)
	fmt.Fprintf(tw, "Run:\t%s\n", orDash(r.RunID))
	if budget != nil {
		fmt.Fprintf(tw, "Run budget:\t%s\n", budget)
	}
	fmt.Fprintf(tw, "State:\t%s\n", r.State)
	if r.ErrorKind != nil {
		fmt.Fprintf(tw, "Error kind:\t%s\n", *r.ErrorKind)
	}
	if r.Error != nil {
		fmt.Fprintf(tw, "Error:\t%s\n", *r.Error)
	}
	fmt.Fprintf(tw, "Tier:\t%s\n", orDash(r.Tier))
	fmt.Fprintf(tw, "Submitted:\t%s\n", r.SubmittedAt.UTC().Format(time.RFC3339Nano))
	if r.FinishedAt != nil {
		fmt.Fprintf(tw, "Finished:\t%s (%s after submission)\n", r.FinishedAt.UTC().Format(time.RFC3339Nano),
			r.FinishedAt.Sub(r.SubmittedAt).Round(time.Millisecond))
	}
	if len(r.Output) > 0 {
		fmt.Fprintf(tw, "Output:\t%s\n", truncate(string(r.Output), 400))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if a := d.Approval; a != nil {
		fmt.Fprintln(w, "\nAwaiting approval:")
		fmt.Fprintf(w, "  Input digest: %s\n", a.InputDigest)
		fmt.Fprintf(w, "  Input (as recorded): %s\n", indentJSON(a.Input, "  "))
		fmt.Fprintf(w, "  Approve:      execledger approve %s --input-digest %s\n", a.ID, a.InputDigest)
	}

	fmt.Fprintln(w, "\nDecisions:")
	switch {
	case d.DecisionsUnreadable != "":
		fmt.Fprintf(w, "  (left out: %s)\n", d.DecisionsUnreadable)
	case len(d.Decisions) == 0:
		fmt.Fprintln(w, "  (none yet, or the audit trail has not caught up)")
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, x := range d.Decisions {
		if x.Kind == "outcome" {
			fmt.Fprintf(tw, "  %s\toutcome\t%s\t%s\t\n", x.Time.UTC().Format(time.RFC3339Nano), orDash(x.State), orDash(x.ErrorKind))
			continue
		}
		line := fmt.Sprintf("  %s\t%s\t%s\treason %s", x.Time.UTC().Format(time.RFC3339Nano), orDash(x.Decision),
			"stage "+orDash(x.Stage), orDash(x.ReasonCode))
		if len(x.DeterminingPolicies) > 0 {
			line += "; policies " + strings.Join(x.DeterminingPolicies, ", ")
		}
		if x.Approver != nil {
			line += "; by " + *x.Approver
		}
		fmt.Fprintln(tw, line+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nAttestation:")
	switch a := d.Attestation; {
	case a == nil:
		fmt.Fprintln(w, "  (none yet)")
	default:
		fmt.Fprintf(w, "  Digest:  %s\n", a.Digest)
		if a.KeyID != "" {
			fmt.Fprintf(w, "  Key id:  %s\n", a.KeyID)
		}
		if a.Statement != nil {
			var st struct {
				PredicateType string `json:"predicateType"`
				Predicate     struct {
					Executor string `json:"executor"`
					Tier     string `json:"tier"`
					Decision string `json:"decision"`
					Outcome  string `json:"outcome"`
				} `json:"predicate"`
			}
			if json.Unmarshal(a.Statement, &st) == nil {
				fmt.Fprintf(w, "  Type:    %s\n  Signed:  executor %s, tier %s, decision %s\n", st.PredicateType,
					orDash(&st.Predicate.Executor), orDash(&st.Predicate.Tier), orDash(&st.Predicate.Decision))
			}
			fmt.Fprintln(w, "  Verify:  execledger requests show ID --envelope FILE; execledger verify FILE --attest-key KEY")
		}
	}

	fmt.Fprintln(w, "\nEvents:")
	if d.LogUnreadable != "" {
		fmt.Fprintf(w, "  (left out: %s)\n", d.LogUnreadable)
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  VERSION\tTIME\tTYPE\tACTOR\tTRACE\tLEAF")
	for _, ev := range d.Events {
		var m struct {
			Actor   string `json:"actor"`
			TraceID string `json:"trace_id"`
		}
		_ = json.Unmarshal(ev.Metadata, &m)
		leaf := "(not sealed yet)"
		if ev.Leaf != nil {
			leaf = strconv.FormatInt(*ev.Leaf, 10)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", ev.Version, ev.RecordedAt.UTC().Format(time.RFC3339Nano), ev.Type,
			orDash(&m.Actor), orDash(&m.TraceID), leaf)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Unsealed) > 0 {
		fmt.Fprintf(w, "\nWARNING: %d event(s) of this stream are below the sealed horizon but not in the Merkle log: written\n"+
			"behind the sealer, they are not part of the record and are left out above (fault unsealed_event):\n", len(d.Unsealed))
		for _, u := range d.Unsealed {
			fmt.Fprintf(w, "  version %d\t%s at position %d (%s)\n", u.Version, u.Type, u.Position, u.Reason)
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func newCancelCmd(e *env) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a request: at once when it has not started, by stopping it when it runs",
		Long: `Cancel ends a pending or awaiting_approval request as cancelled at once, and flags a running one:
its executor stops the call and records it cancelled. The submitting principal or ledger_admin may
cancel. Exit 3 when the request had already ended.`,
		Example: `  execledger cancel 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --reason "wrong input"`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fail(exitUsage, "%q is not a request id (a UUID)", args[0])
			}
			return withClient(cmd.Context(), e, func(c *ledger.Client, _ *pgxpool.Pool) error {
				ok, err := c.Cancel(cmd.Context(), id, reason)
				if err != nil {
					return requestFailure(id, err)
				}
				if !ok {
					return fail(exitNotOK, "request %s had already ended; nothing to cancel", id)
				}
				return reportRequest(cmd.Context(), e, c, id, "cancel requested")
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in request.cancelled (at most 1,024 bytes)")
	e.jsonFlag(cmd, "print the request as JSON")
	e.configFlag(cmd)
	return cmd
}

func newApproveCmd(e *env) *cobra.Command {
	var note, digest string
	cmd := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve a request waiting for approval (ledger_approver, not its submitter)",
		Long: `Approve lets a request in awaiting_approval run, or approves a pending one before it is claimed.
The login must hold ledger_approver and be another principal than the submitter. --input-digest binds
the approval to exactly the input you reviewed (the sha256:<hex> of tool.requested). Exit 3 when the
request runs already, has ended or is approved, or when its input is not the one --input-digest names
(the state is checked first).`,
		Example: `  execledger approve 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --note "reviewed" --input-digest sha256:9f86d0…`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fail(exitUsage, "%q is not a request id (a UUID)", args[0])
			}
			return withClient(cmd.Context(), e, func(c *ledger.Client, _ *pgxpool.Pool) error {
				if err := c.Approve(cmd.Context(), id, note, digest); err != nil {
					return approverFailure(id, err)
				}
				return reportRequest(cmd.Context(), e, c, id, "approved")
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "recorded in approval.granted (at most 1,024 bytes)")
	cmd.Flags().StringVar(&digest, "input-digest", "", "approve only if the request's input has this `sha256:HEX` digest")
	e.jsonFlag(cmd, "print the request as JSON")
	e.configFlag(cmd)
	return cmd
}

func newDenyCmd(e *env) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "deny ID",
		Short: "Deny a request waiting for approval (ledger_approver, not its submitter)",
		Long: `Deny ends a request in awaiting_approval (or a pending one not yet claimed) as denied with
error kind approval_denied, under approve's rules. Exit 3 when the request runs already or has ended.`,
		Example: `  execledger deny 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --note "not during the freeze"`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fail(exitUsage, "%q is not a request id (a UUID)", args[0])
			}
			return withClient(cmd.Context(), e, func(c *ledger.Client, _ *pgxpool.Pool) error {
				if err := c.DenyApproval(cmd.Context(), id, note); err != nil {
					return approverFailure(id, err)
				}
				return reportRequest(cmd.Context(), e, c, id, "denied")
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "recorded in approval.denied (at most 1,024 bytes)")
	e.jsonFlag(cmd, "print the request as JSON")
	e.configFlag(cmd)
	return cmd
}

// withClient connects and runs f with a client of the SQL API and its pool.
func withClient(ctx context.Context, e *env, f func(*ledger.Client, *pgxpool.Pool) error) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	c := ledger.NewClient(pool)
	defer c.Close()
	return f(c, pool)
}

// withReader is withClient on the read-only pool (openReader): the
// replica when database.replica_url is set.
func withReader(ctx context.Context, e *env, f func(*ledger.Client, *pgxpool.Pool) error) error {
	_, pool, err := e.connectReader(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	c := ledger.NewClient(pool)
	defer c.Close()
	return f(c, pool)
}

// approverFailure is requestFailure, saying who may decide approvals.
func approverFailure(id uuid.UUID, err error) error {
	switch {
	case errors.Is(err, ledger.ErrNotPermitted):
		return fail(exitError, "%v (approve and deny need the ledger_approver role, and a principal other than the submitter)", err)
	case errors.Is(err, ledger.ErrInvalidInput):
		return fail(exitNotOK, "%v", err) // the input is not the one --input-digest names
	}
	return requestFailure(id, err)
}

// requestFailure maps the SQL API's refusals onto exit codes.
func requestFailure(id uuid.UUID, err error) error {
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return fail(exitNotFound, "no request %s (or none this login may see)", id)
	case errors.Is(err, ledger.ErrWrongState):
		return fail(exitNotOK, "%v", err)
	}
	// What the database refused (an over-long --note or --reason) is no
	// usage error: the command line was well formed.
	return fail(exitError, "%v", err)
}

// reportRequest prints what was done and the request as it is now.
func reportRequest(ctx context.Context, e *env, c *ledger.Client, id uuid.UUID, done string) error {
	r, err := c.Get(ctx, id)
	if err != nil {
		// The change committed; a login that may act on a request it
		// cannot read (an approver of another principal's) ends here.
		if errors.Is(err, ledger.ErrNotFound) {
			if e.json {
				return printJSON(e, map[string]any{"id": id, "result": done})
			}
			fmt.Fprintf(e.io.out, "%s: %s\n", id, done)
			return nil
		}
		return fail(exitError, "%v", err)
	}
	if e.json {
		return printJSON(e, r)
	}
	fmt.Fprintf(e.io.out, "%s: %s; now %s\n", id, done, r.State)
	return nil
}
