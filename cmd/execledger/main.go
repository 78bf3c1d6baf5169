// Command execledger is Execledger's one binary: the executor service, the
// embedded development server, migrations and the command-line client.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Environ())
	stop()
	os.Exit(code)
}
