package executor

import (
	"context"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// attestation is what an attestation.signed event and the read model need.
type attestation struct {
	digest, keyID, envelope string
	event                   ledger.NewEvent
}

// attestationInput describes one outcome to attest.
type attestationInput struct {
	requestID   uuid.UUID
	attempt     int
	tool        string
	principal   string
	runID       string
	inputDigest []byte // SHA-256 of the exact input bytes
	output      []byte // nil when there is none
	executor    string // Palyra's label: "policy" for denials, the tool's executor otherwise
	tier        string
	decision    string // "allow" or "deny"
	reason      string
	started     time.Time
	finished    time.Time
	result      Result
	approvalRef string
	// policyDigest is the digest of the policy that decided; "" (an
	// outcome no decision of this executor led to: a rescue, an expiry)
	// means the policy in force.
	policyDigest string
	skill        *attest.Skill // the skill artifact, for skill tools
	// trace is the span the attestation.signed event is written in.
	trace trace.SpanContext
}

// sign builds and signs the statement for in and the event that records it.
func (r *recorder) sign(ctx context.Context, in attestationInput) (attestation, error) {
	ex := attest.Execution{
		AttestationID:  in.requestID.String() + "/" + strconv.Itoa(in.attempt),
		RequestID:      in.requestID.String(),
		Tool:           in.tool,
		Principal:      in.principal,
		RunID:          in.runID,
		Tier:           in.tier,
		Executor:       in.executor,
		ExecutorHost:   r.label,
		Enforcement:    in.result.Enforcement,
		PolicyDigest:   in.policyDigestOr(r.policy),
		Decision:       in.decision,
		DecisionReason: in.reason,
		ApprovalRef:    in.approvalRef,
		StartedAt:      in.started.UTC(),
		FinishedAt:     in.finished.UTC(),
		TimedOut:       in.result.TimedOut,
		Success:        in.result.ErrorKind == "",
		ExitStatus:     in.result.ExitStatus,
		ErrorKind:      string(in.result.ErrorKind),
		Resources:      in.result.Resources,
		LogCheckpoint:  r.logCheckpoint(ctx),
		Skill:          in.skill,
	}
	st := attest.NewStatement(nil, in.output, ex)
	for i := range st.Subject {
		if st.Subject[i].Name == "input" {
			st.Subject[i].Digest = map[string]string{"sha256": hex.EncodeToString(in.inputDigest)}
		}
	}
	_, envJSON, digest, err := r.signer.Sign(st)
	if err != nil {
		return attestation{}, err
	}
	return attestation{digest: digest, keyID: r.signer.KeyID(), envelope: string(envJSON), event: ledger.NewEvent{
		Type: "attestation.signed",
		Payload: map[string]any{
			"request_id":         in.requestID,
			"attestation_digest": digest,
			"key_id":             r.signer.KeyID(),
			"envelope":           string(envJSON),
		},
		Metadata: r.meta(in.requestID, in.trace),
	}}, nil
}

// members are the attestation's members of an event that carries it
// (contract.Attesting): attestation.signed's, or execution.completed's
// besides the outcome.
func (a attestation) members() map[string]any {
	return map[string]any{"attestation_digest": a.digest, "key_id": a.keyID, "envelope": a.envelope}
}

// policyDigestOr is the attestation's policy digest: the deciding
// policy's, else the one in force.
func (in attestationInput) policyDigestOr(ref *policyRef) string {
	if in.policyDigest != "" {
		return in.policyDigest
	}
	return ref.load().Digest()
}
