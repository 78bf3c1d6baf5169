package main

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/ledger"
)

func newStatusCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show a request: its state, outcome and attestation",
		Example: `  execledger status 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80
  execledger status 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), e, args[0])
		},
	}
	e.jsonFlag(cmd, "print JSON")
	e.configFlag(cmd)
	return cmd
}

func runStatus(ctx context.Context, e *env, arg string) error {
	id, err := uuid.Parse(arg)
	if err != nil {
		return fail(exitUsage, "%q is not a request id (a UUID)", arg)
	}
	cfg, pool, err := e.connectReader(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()
	r, err := client.Get(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return fail(exitNotFound, "no request %s", id)
	}
	if err != nil {
		return fail(exitError, "%v", err)
	}
	return printRequest(e, r, readBudget(ctx, client, r, cfg.Executor.DefaultMaxCallsPerRun), e.json)
}
