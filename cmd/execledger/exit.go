package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes. Scripts depend on them; docs/cli.md lists them.
const (
	exitOK        = 0 // done; with --wait: the request succeeded
	exitError     = 1 // something failed (database unreachable, bad configuration, ...)
	exitUsage     = 2 // the command line is wrong
	exitNotOK     = 3 // with --wait: the request ended failed, denied or cancelled
	exitTimeout   = 4 // with --wait: the request was not final when the wait ended
	exitNotFound  = 5 // no such request (or one the caller may not see), no such projection
	exitNotFailed = 6 // projector retry: the projection is not failed
)

// exitKinds names each exit code but 0 in a --json error.
var exitKinds = map[int]string{
	exitError:     "error",
	exitUsage:     "usage",
	exitNotOK:     "not_ok",
	exitTimeout:   "timeout",
	exitNotFound:  "not_found",
	exitNotFailed: "not_failed",
}

// cmdError is how a command fails: the exit code and what to tell the
// user. The root prints it once (printError), as text or, with --json, as
// JSON. A message "" prints nothing: the command already said everything
// on stdout (a verdict such as "not ok", or a --wait that ended failed).
type cmdError struct {
	code int
	msg  string
	err  error // the first error fail formatted, for errors.As
}

func (e *cmdError) Error() string { return e.msg }

func (e *cmdError) Unwrap() error { return e.err }

// fail is the error a command returns to exit with code after telling the
// user what went wrong. It wraps the first error among args.
func fail(code int, format string, args ...any) error {
	ce := &cmdError{code: code, msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			ce.err = err
			break
		}
	}
	return ce
}

// exitCode is the error a command returns to exit with code without a
// message; nil for exitOK.
func exitCode(code int) error {
	if code == exitOK {
		return nil
	}
	return &cmdError{code: code}
}

// usageError makes err, from cobra, pflag or an argument check, a usage
// error.
func usageError(err error) error {
	var ee *cmdError
	if errors.As(err, &ee) {
		return err
	}
	return &cmdError{code: exitUsage, msg: err.Error()}
}

// jsonError is the one line a failed command prints on stderr with --json.
type jsonError struct {
	Error struct {
		ExitCode int    `json:"exit_code"`
		Kind     string `json:"kind"`
		Message  string `json:"message"`
		Usage    string `json:"usage,omitempty"` // usage errors: the command's usage line
	} `json:"error"`
}

// printError reports err, which cmd returned, on w and returns the exit
// code: "execledger: message" and, for a usage error, the usage line; or,
// asJSON, one JSON object. An error that is not a *cmdError comes from
// cobra (an unknown flag or command): a usage error.
func printError(w io.Writer, cmd *cobra.Command, err error, asJSON bool) int {
	var ee *cmdError
	if !errors.As(err, &ee) {
		ee = &cmdError{code: exitUsage, msg: err.Error()}
	}
	if ee.msg == "" {
		return ee.code
	}
	var usage string
	if ee.code == exitUsage && cmd != nil {
		usage = usageLine(cmd)
	}
	if asJSON {
		var j jsonError
		j.Error.ExitCode, j.Error.Kind, j.Error.Message, j.Error.Usage = ee.code, exitKinds[ee.code], ee.msg, usage
		b, _ := json.Marshal(j)
		fmt.Fprintf(w, "%s\n", b)
		return ee.code
	}
	fmt.Fprintf(w, "execledger: %s\n", ee.msg)
	if usage != "" {
		fmt.Fprintf(w, "usage: %s\nRun '%s --help' for more.\n", usage, cmd.CommandPath())
	}
	return ee.code
}
