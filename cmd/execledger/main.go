// Command execledger is Execledger's one binary: the executor service, the
// embedded development server, migrations and the command-line client.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/execledger/execledger/internal/sandbox/procinit"
)

func main() {
	// The tier B sandbox re-executes this binary as the init of each
	// sandboxed process, before anything else is read or set up.
	if len(os.Args) > 1 && os.Args[1] == procinit.Hidden {
		os.Exit(procinit.Main())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Environ())
	stop()
	os.Exit(code)
}
