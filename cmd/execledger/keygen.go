package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/execledger/execledger/internal/attest"
)

func runKeygen(_ context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("execledger keygen", flag.ContinueOnError)
	fs.SetOutput(e.io.err)
	out := fs.String("out", "execledger-attest.key", "private key file to write (mode 0600); the public key goes to FILE.pub")
	if _, code, ok := e.parseArgs(fs, args, 0, "execledger keygen [--out FILE]"); !ok {
		return code
	}
	id, err := attest.GenerateKeyFiles(*out, *out+".pub")
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "key %s\nprivate: %s\npublic:  %s.pub\n", id, *out, *out)
	return exitOK
}
