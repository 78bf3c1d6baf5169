package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/ledger"
)

// submitFlags are submit's flags.
type submitFlags struct {
	runID, key, context string
	wait                bool
	timeout             time.Duration
}

func newSubmitCmd(e *env) *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit TOOL JSON",
		Short: "Submit a tool request; with --wait, wait until it is final",
		Long: `Submit records a request to run TOOL with the JSON object JSON ("-": read it from stdin)
and prints its id. The principal is the database login's.

With --wait it waits until the request is final, prints it, and exits 0 when it succeeded,
3 when it failed, was denied or cancelled, 4 when --timeout ended the wait first. With
database.replica_url set it then also waits until the replica has replayed that final state
(read-your-writes: a later requests show on the replica sees it) and prints the request as
the replica has it.`,
		Example: `  execledger submit echo '{"text":"hi"}'
  execledger submit process.run '{"command":"ls"}' --run r1 --key build-1 --wait --timeout 2m
  echo '{"text":"from stdin"}' | execledger submit echo - --json`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSubmit(cmd.Context(), e, f, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.runID, "run", "", "run `ID` (budgets and workspaces are per run)")
	fl.StringVar(&f.key, "key", "", "idempotency `KEY`: a retry with the same key returns the same request")
	fl.StringVar(&f.context, "context", "", `request context as JSON: {"device":…,"channel":…,"session":…}`)
	fl.BoolVar(&f.wait, "wait", false, "wait until the request is final; the exit code tells how it ended")
	fl.DurationVar(&f.timeout, "timeout", 60*time.Second, "with --wait: how long to wait")
	e.jsonFlag(cmd, "print JSON")
	e.configFlag(cmd)
	return cmd
}

func runSubmit(ctx context.Context, e *env, f submitFlags, tool, inputArg string) error {
	var err error
	input := []byte(inputArg)
	if inputArg == "-" {
		if input, err = io.ReadAll(io.LimitReader(e.io.in, 2<<20)); err != nil {
			return fail(exitError, "read input: %v", err)
		}
	}
	if !json.Valid(input) {
		return fail(exitUsage, "input is not valid JSON")
	}
	var rc ledger.RequestContext
	if f.context != "" {
		dec := json.NewDecoder(strings.NewReader(f.context))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rc); err != nil {
			return fail(exitUsage, "--context: %v", err)
		}
	}
	cfg, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()

	id, err := client.Submit(ctx, ledger.SubmitParams{Tool: tool, Input: json.RawMessage(input), RunID: f.runID,
		IdempotencyKey: f.key, Context: rc})
	if err != nil {
		code := exitError
		if errors.Is(err, ledger.ErrInvalidInput) || errors.Is(err, ledger.ErrInputTooLarge) {
			code = exitUsage
		}
		return fail(code, "%v", err)
	}
	if !f.wait {
		if e.json {
			return printJSON(e, map[string]any{"id": id})
		}
		fmt.Fprintln(e.io.out, id)
		return nil
	}
	var replica *pgxpool.Pool
	if cfg.Database.ReplicaURL != "" {
		if replica, err = openReader(ctx, cfg); err != nil {
			return fail(exitError, "%v", err)
		}
		defer replica.Close()
	}
	return awaitAndPrint(ctx, e, client, pool, replica, id, f.timeout, cfg.Executor.DefaultMaxCallsPerRun, e.json)
}

// awaitAndPrint waits until request id is final (on the primary, pool),
// and with a replica until the replica has it final too, and prints it.
func awaitAndPrint(ctx context.Context, e *env, client *ledger.Client, pool, replica *pgxpool.Pool, id uuid.UUID, timeout time.Duration, defaultMax int, asJSON bool) error {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := client.Await(waitCtx, id)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil { // --timeout's, not the caller's
			fmt.Fprintln(e.io.out, id)
			return fail(exitTimeout, "request %s is not final after %s", id, timeout)
		}
		return fail(exitError, "%v", err)
	}
	if replica != nil {
		if r, err = awaitReplica(waitCtx, pool, replica, id); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				fmt.Fprintln(e.io.out, id)
				return fail(exitTimeout, "request %s is final on the primary, but the replica (database.replica_url) has not replayed it after %s", id, timeout)
			}
			return fail(exitError, "replica: %v", err)
		}
	}
	if err := printRequest(e, r, readBudget(ctx, client, r, defaultMax), asJSON); err != nil {
		return err
	}
	if r.State != ledger.StateSucceeded {
		return exitCode(exitNotOK) // the request printed says how it ended
	}
	return nil
}

// awaitReplica waits until the replica has replayed the primary's WAL up
// to where it was once request id was final there, then reads the request
// from the replica. A replica that is not in recovery (a URL that fell
// back to a primary, or a promoted standby), or that does not report its
// replay position (some managed services' replicas), is polled until it
// shows the request final.
func awaitReplica(ctx context.Context, primary, replica *pgxpool.Pool, id uuid.UUID) (*ledger.Request, error) {
	var lsn string
	if err := primary.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return nil, fmt.Errorf("the primary's WAL position: %w", err)
	}
	rc := ledger.NewClient(replica)
	defer rc.Close()
	pause := 10 * time.Millisecond
	for {
		var replayed bool
		err := replica.QueryRow(ctx, `SELECT CASE WHEN pg_is_in_recovery() AND pg_last_wal_replay_lsn() IS NOT NULL
THEN pg_last_wal_replay_lsn() >= $1::pg_lsn ELSE true END`, lsn).Scan(&replayed)
		if err != nil {
			return nil, err
		}
		if replayed {
			r, err := rc.Get(ctx, id)
			switch {
			case err == nil && r.State.Final():
				return r, nil
			case err != nil && !errors.Is(err, ledger.ErrNotFound):
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

func printJSON(e *env, v any) error {
	enc := json.NewEncoder(e.io.out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fail(exitError, "%v", err)
	}
	return nil
}

// requestJSON is a request as --json prints it, with its run's budget.
type requestJSON struct {
	*ledger.Request
	RunBudget *runBudgetView `json:"run_budget,omitempty"`
}

func printRequest(e *env, r *ledger.Request, budget *runBudgetView, asJSON bool) error {
	if asJSON {
		return printJSON(e, requestJSON{r, budget})
	}
	w := e.io.out
	fmt.Fprintf(w, "id:           %s\nprincipal:    %s\ntool:         %s\n", r.ID, r.Principal, r.Tool)
	if r.RunID != nil {
		fmt.Fprintf(w, "run:          %s\n", *r.RunID)
		if budget != nil {
			fmt.Fprintf(w, "run budget:   %s\n", budget)
		}
	}
	fmt.Fprintf(w, "state:        %s\n", r.State)
	if r.ErrorKind != nil {
		fmt.Fprintf(w, "error_kind:   %s\n", *r.ErrorKind)
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error:        %s\n", *r.Error)
	}
	if r.Tier != nil {
		fmt.Fprintf(w, "tier:         %s\n", *r.Tier)
	}
	fmt.Fprintf(w, "submitted_at: %s\n", r.SubmittedAt.Format(time.RFC3339Nano))
	if r.FinishedAt != nil {
		fmt.Fprintf(w, "finished_at:  %s\n", r.FinishedAt.Format(time.RFC3339Nano))
	}
	if r.AttestationDigest != nil {
		fmt.Fprintf(w, "attestation:  %s\n", *r.AttestationDigest)
	}
	if len(r.Output) > 0 {
		fmt.Fprintf(w, "output:       %s\n", r.Output)
	}
	return nil
}
