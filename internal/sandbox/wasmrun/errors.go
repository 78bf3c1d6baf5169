package wasmrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"

	"github.com/execledger/execledger/ledger"
)

// callError is a failure with its error kind.
type callError struct {
	kind ledger.ErrorKind
	msg  string
}

func (e *callError) Error() string { return e.msg }

func refuse(kind ledger.ErrorKind, format string, args ...any) *callError {
	return &callError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func isTableLimit(err error) bool { return errors.Is(err, errTableLimit) }

// errTimeout is the cause of a call's own timeout.
var errTimeout = errors.New("the call's timeout passed")

// interrupted is why a call was stopped: cancelled when ctx was, else
// timed_out (a deadline passed, the call's own or the executor's).
func interrupted(ctx context.Context) *callError {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || errors.Is(cause, errTimeout) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return refuse(ledger.KindTimedOut, "timed out")
	}
	return refuse(ledger.KindCancelled, "cancelled")
}

// outcome is how the module's code ended.
type outcome struct {
	err         error
	instantiate bool  // err came from instantiation
	fuelLeft    int64 // after the call; negative when it ran out
	metered     bool
	memRefused  bool
	stopped     bool // a yield ended it (runner.yield)
	memLimit    uint32
	fuelLimit   int64
}

// classify maps a failed outcome to an error kind, Palyra's way: out of
// fuel or memory is quota_exceeded, an interrupted call timed_out or
// cancelled, a failure to link invalid_input, any other trap or a
// non-zero exit runtime_failure.
func classify(ctx context.Context, o outcome) *callError {
	if ctx.Err() != nil {
		return interrupted(ctx)
	}
	if o.stopped { // its deadline passed before its context said so
		return refuse(ledger.KindTimedOut, "timed out")
	}
	outOfFuel := o.metered && o.fuelLeft < 0
	if o.memRefused {
		// The cause, whatever the module did next (a language runtime
		// may spend its fuel reporting it).
		ce := refuse(ledger.KindQuotaExceeded, "memory limit reached: %d pages (%d MiB)", o.memLimit, o.memLimit/16)
		if outOfFuel {
			ce.msg += fmt.Sprintf(", then out of fuel (limit %d)", o.fuelLimit)
		}
		return ce
	}
	if outOfFuel {
		return refuse(ledger.KindQuotaExceeded, "out of fuel: the limit is %d", o.fuelLimit)
	}
	var exit *sys.ExitError
	if errors.As(o.err, &exit) {
		return refuse(ledger.KindRuntimeFailure, "exited with code %d", exit.ExitCode())
	}
	msg := firstLine(o.err.Error())
	if o.instantiate && !strings.HasPrefix(msg, "start ") {
		// Linking, data or element segments: the module does not fit.
		return refuse(ledger.KindInvalidInput, "instantiating the module: %s", msg)
	}
	return refuse(ledger.KindRuntimeFailure, "trap: %s", msg)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func sha256Digest(b []byte) string {
	d := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(d[:])
}
