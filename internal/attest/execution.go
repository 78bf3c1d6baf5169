package attest

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"
)

// Decisions recorded in Execution.Decision.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// ExecutorPolicy is the Execution.Executor label of a request denied by
// policy, which never reached an executor (Palyra's "policy" label).
const ExecutorPolicy = "policy"

// Execution is the predicate: what ran, under which decision and limits, and how it ended.
//
// The JSON field names are part of the attestation format; they are pinned by
// the golden files in testdata/.
type Execution struct {
	AttestationID  string           `json:"attestation_id"` // unique, e.g. the request id + attempt, given by the caller
	RequestID      string           `json:"request_id"`
	Tool           string           `json:"tool"`
	Principal      string           `json:"principal"`
	RunID          string           `json:"run_id,omitempty"`
	Tier           string           `json:"tier,omitempty"`        // "builtin", "A", "B", "C" or "" for denials
	Executor       string           `json:"executor"`              // Palyra's labels: "policy" (denied), "builtin", "sandbox_tier_a", "sandbox_tier_b", "sandbox_tier_c_linux_bubblewrap", ...
	ExecutorHost   string           `json:"executor_host"`         // the executor process label
	Enforcement    map[string]any   `json:"enforcement,omitempty"` // limits applied / sandbox enforcement
	PolicyDigest   string           `json:"policy_digest"`
	Decision       string           `json:"decision"`        // DecisionAllow or DecisionDeny
	DecisionReason string           `json:"decision_reason"` // reason code
	ApprovalRef    string           `json:"approval_ref,omitempty"`
	StartedAt      time.Time        `json:"started_at"` // RFC 3339, UTC (Sign converts), ns precision
	FinishedAt     time.Time        `json:"finished_at"`
	TimedOut       bool             `json:"timed_out"`
	Success        bool             `json:"success"`
	ExitStatus     *int             `json:"exit_status,omitempty"`
	ErrorKind      string           `json:"error_kind,omitempty"`
	Resources      map[string]int64 `json:"resources,omitempty"`                   // e.g. cpu_ms, max_rss_bytes, fuel, wall_ms
	PreviousDigest string           `json:"previous_attestation_digest,omitempty"` // Digest of the request's previous attestation envelope, if any
	// LogCheckpoint is the Merkle log's newest signed checkpoint when the
	// attestation was signed: the log state it was made against. Absent
	// while the log has no checkpoint.
	LogCheckpoint *LogCheckpoint `json:"log_checkpoint,omitempty"`
	// Skill names the installed skill whose tool ran (or was refused):
	// absent for tools that are not skills.
	Skill *Skill `json:"skill,omitempty"`
}

// Skill identifies the exact skill artifact an execution used: its id and
// version, the digest of the archive that was installed, the digest of
// its payload as the executor loaded it, and the publisher key that
// signed it (its key id).
type Skill struct {
	ID             string `json:"id"`
	Version        string `json:"version"`
	Publisher      string `json:"publisher"`
	ArtifactDigest string `json:"artifact_digest"`
	PayloadDigest  string `json:"payload_digest,omitempty"`
	PublisherKey   string `json:"publisher_key"`
}

// LogCheckpoint names a checkpoint of the Merkle log (C2SP tlog-checkpoint):
// its origin, tree size and root hash (standard base64, as in the note).
type LogCheckpoint struct {
	Origin   string `json:"origin"`
	Size     uint64 `json:"size"`
	RootHash string `json:"root_hash"`
}

// validate checks the fields an attestation cannot do without. It is
// deliberately small: the predicate records what happened, and the signer
// should not refuse to attest an unusual outcome.
func (e *Execution) validate() error {
	switch {
	case e.AttestationID == "":
		return fmt.Errorf("%w: empty attestation_id", ErrInvalidStatement)
	case e.RequestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidStatement)
	case e.Tool == "":
		return fmt.Errorf("%w: empty tool", ErrInvalidStatement)
	case e.Executor == "":
		return fmt.Errorf("%w: empty executor", ErrInvalidStatement)
	case e.Decision != DecisionAllow && e.Decision != DecisionDeny:
		return fmt.Errorf("%w: decision %q is neither %q nor %q", ErrInvalidStatement, e.Decision, DecisionAllow, DecisionDeny)
	case e.Decision == DecisionDeny && e.Success:
		return fmt.Errorf("%w: a denied request cannot succeed", ErrInvalidStatement)
	case e.StartedAt.IsZero():
		return fmt.Errorf("%w: started_at not set", ErrInvalidStatement)
	case e.FinishedAt.Before(e.StartedAt):
		return fmt.Errorf("%w: finished_at %s before started_at %s", ErrInvalidStatement,
			e.FinishedAt.Format(time.RFC3339Nano), e.StartedAt.Format(time.RFC3339Nano))
	}
	if c := e.LogCheckpoint; c != nil {
		if root, err := base64.StdEncoding.DecodeString(c.RootHash); err != nil || len(root) != sha256.Size || c.Origin == "" || c.Size == 0 {
			return fmt.Errorf("%w: log_checkpoint needs an origin, a size above 0 and a base64 SHA-256 root_hash", ErrInvalidStatement)
		}
	}
	if e.PreviousDigest != "" && !validDigest(e.PreviousDigest) {
		return fmt.Errorf("%w: previous_attestation_digest %q is not \"sha256:<64 hex>\"", ErrInvalidStatement, e.PreviousDigest)
	}
	return nil
}
