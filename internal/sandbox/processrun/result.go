package processrun

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/procinput"
	"github.com/execledger/execledger/internal/redact"
	"github.com/execledger/execledger/ledger"
)

// What every platform's process.run shares: the workspace names, the
// refusals and the stored output. The rest is Linux's (tiers B and C with
// bubblewrap, background processes, the workspace sweep) or macOS's and
// Windows's (native.go).

// Workspace directory names that no run id may take: a request without a
// run works in _req-<request id>, and the sweep renames a workspace to
// _del-... before it removes it.
const (
	trashPrefix = "_del-"
	reqPrefix   = "_req-"
)

func failure(kind ledger.ErrorKind, msg string) executor.Result {
	return executor.Result{ErrorKind: kind, Error: msg}
}

// refusal maps a procinput error to the executor's Refusal.
func refusal(err error) *executor.Refusal {
	var pe *procinput.Error
	if errors.As(err, &pe) {
		return &executor.Refusal{Kind: pe.Kind, Reason: pe.Reason, Message: pe.Message}
	}
	return &executor.Refusal{Kind: ledger.KindInvalidInput, Message: err.Error()}
}

// component checks one path element taken from the call.
func component(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") || len(s) > 200 {
		return &procinput.Error{Kind: ledger.KindInvalidInput, Reason: "workspace_name_invalid",
			Message: fmt.Sprintf("%s %q cannot name a workspace directory", what, s)}
	}
	return nil
}

// limitOutput is the output budget's name in limit_exceeded, the key of
// serve's [process_run] configuration.
const limitOutput = "output_limit_bytes"

// runOutput is the stored output of a run.
type runOutput struct {
	ExitCode        int    `json:"exit_code"`
	Signal          int    `json:"signal,omitempty"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	StdoutLossy     bool   `json:"stdout_lossy,omitempty"`
	StderrLossy     bool   `json:"stderr_lossy,omitempty"`
	// LimitExceeded names the limit that ended the process (limit.go),
	// with error kind quota_exceeded.
	LimitExceeded  string `json:"limit_exceeded,omitempty"`
	DurationMS     int64  `json:"duration_ms"`
	Tier           string `json:"tier"`
	SandboxBackend string `json:"sandbox_backend"`
}

// storable makes captured bytes storable: valid UTF-8 (U+FFFD for bad
// bytes), redacted, and whether anything was replaced. JSON encoding
// escapes the control characters.
func storable(red *redact.Redactor, b []byte) (string, bool) {
	// PostgreSQL's jsonb and text cannot hold NUL: it becomes U+FFFD too.
	lossy := !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0
	s := strings.ReplaceAll(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00", "\uFFFD")
	return red.String(s), lossy
}
