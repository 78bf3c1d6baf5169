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

	"github.com/execledger/execledger/ledger"
)

func runSubmit(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "submit")
	runID := fs.String("run", "", "run id (budgets and workspaces are per run)")
	key := fs.String("key", "", "idempotency key: a retry with the same key returns the same request")
	reqCtx := fs.String("context", "", `request context as JSON: {"device":…,"channel":…,"session":…}`)
	wait := fs.Bool("wait", false, "wait until the request is final; the exit code tells how it ended")
	timeout := fs.Duration("timeout", 60*time.Second, "with --wait: how long to wait")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := e.parseArgs(fs, args, 2, "execledger submit TOOL JSON [--run R] [--key K] [--context JSON] [--wait] [--timeout D] [--json]")
	if !ok {
		return code
	}
	var err error
	input := []byte(pos[1])
	if pos[1] == "-" {
		if input, err = io.ReadAll(io.LimitReader(e.io.in, 2<<20)); err != nil {
			return e.fail(exitError, "read input: %v", err)
		}
	}
	if !json.Valid(input) {
		return e.fail(exitUsage, "input is not valid JSON")
	}
	var rc ledger.RequestContext
	if *reqCtx != "" {
		dec := json.NewDecoder(strings.NewReader(*reqCtx))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rc); err != nil {
			return e.fail(exitUsage, "--context: %v", err)
		}
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()

	id, err := client.Submit(ctx, ledger.SubmitParams{Tool: pos[0], Input: json.RawMessage(input), RunID: *runID,
		IdempotencyKey: *key, Context: rc})
	if err != nil {
		code := exitError
		if errors.Is(err, ledger.ErrInvalidInput) || errors.Is(err, ledger.ErrInputTooLarge) {
			code = exitUsage
		}
		return e.fail(code, "%v", err)
	}
	if !*wait {
		if *asJSON {
			return printJSON(e, map[string]any{"id": id})
		}
		fmt.Fprintln(e.io.out, id)
		return exitOK
	}
	return awaitAndPrint(ctx, e, client, id, *timeout, *asJSON)
}

func awaitAndPrint(ctx context.Context, e *env, client *ledger.Client, id uuid.UUID, timeout time.Duration, asJSON bool) int {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := client.Await(waitCtx, id)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintln(e.io.out, id)
			return e.fail(exitTimeout, "request %s is not final after %s", id, timeout)
		}
		return e.fail(exitError, "%v", err)
	}
	code := printRequest(e, r, asJSON)
	if code == exitOK && r.State != ledger.StateSucceeded {
		return exitNotOK
	}
	return code
}

func printJSON(e *env, v any) int {
	enc := json.NewEncoder(e.io.out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return e.fail(exitError, "%v", err)
	}
	return exitOK
}

func printRequest(e *env, r *ledger.Request, asJSON bool) int {
	if asJSON {
		return printJSON(e, r)
	}
	w := e.io.out
	fmt.Fprintf(w, "id:           %s\nprincipal:    %s\ntool:         %s\n", r.ID, r.Principal, r.Tool)
	if r.RunID != nil {
		fmt.Fprintf(w, "run:          %s\n", *r.RunID)
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
	return exitOK
}
