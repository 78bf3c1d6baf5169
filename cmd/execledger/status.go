package main

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/execledger/execledger/ledger"
)

func runStatus(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "status")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := e.parseArgs(fs, args, 1, "execledger status ID [--json]")
	if !ok {
		return code
	}
	id, err := uuid.Parse(pos[0])
	if err != nil {
		return e.fail(exitUsage, "%q is not a request id (a UUID)", pos[0])
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()
	r, err := client.Get(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return e.fail(exitNotFound, "no request %s", id)
	}
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	return printRequest(e, r, *asJSON)
}
