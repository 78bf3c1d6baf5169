package readmodel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/ledger"
)

// Decision is one row of the audit trail about the request.
type Decision struct {
	Time                time.Time `json:"recorded_at"`
	Kind                string    `json:"kind"`
	Event               string    `json:"event_type"`
	Attempt             *int      `json:"attempt"`
	Decision            *string   `json:"decision"`
	Stage               *string   `json:"stage"`
	ReasonCode          *string   `json:"reason_code"`
	DeterminingPolicies []string  `json:"determining_policies"`
	PolicyDigest        *string   `json:"policy_digest"`
	Approver            *string   `json:"approver"`
	State               *string   `json:"state"`
	ErrorKind           *string   `json:"error_kind"`
}

// TrailEvent is one event of the request's stream.
type TrailEvent struct {
	Version    int64           `json:"version"`
	Type       string          `json:"type"`
	RecordedAt time.Time       `json:"recorded_at"`
	Position   int64           `json:"position"`
	Metadata   json.RawMessage `json:"metadata"`
	Payload    json.RawMessage `json:"payload"`
	// Leaf is the event's leaf in the Merkle log; absent while it is not
	// sealed yet.
	Leaf *int64 `json:"leaf,omitempty"`
}

// Unsealed is an event of the stream that is below the sealed horizon
// and no leaf: a forgery, shown apart and never as part of the record.
type Unsealed struct {
	Version  int64  `json:"version"`
	Type     string `json:"type"`
	Position int64  `json:"position"`
	Reason   string `json:"reason"`
}

// Attestation is what a Description tells of the request's newest
// attestation.
type Attestation struct {
	Digest string `json:"digest"`
	KeyID  string `json:"keyid,omitempty"`
	// Statement is the in-toto statement the envelope signs; Envelope the
	// DSSE envelope itself, byte for byte, for execledger verify.
	Statement json.RawMessage `json:"statement,omitempty"`
	Envelope  json.RawMessage `json:"envelope,omitempty"`
}

// Description is one request described; requests show --json prints it.
type Description struct {
	Request     *ledger.Request `json:"request"`
	Decisions   []Decision      `json:"decisions"`
	Events      []TrailEvent    `json:"events"`
	Attestation *Attestation    `json:"attestation"`
	// Unsealed are the stream's events that the Merkle log passed without
	// sealing (fault unsealed_event): not in Events, not the record.
	Unsealed []Unsealed `json:"unsealed_events,omitempty"`
	// LogUnreadable says why the events and the attestation's statement
	// are missing: the login may not read the log.
	LogUnreadable string `json:"log_unreadable,omitempty"`
	// DecisionsUnreadable says why the decisions are missing: the login
	// may not read the audit trail (an approver).
	DecisionsUnreadable string `json:"decisions_unreadable,omitempty"`
	// Approval is what an approval of the request decides, while it waits
	// for one: its input as recorded and the digest an approval binds to
	// (ledger.awaiting_approval, which approvers, auditors and
	// administrators may call). Absent otherwise.
	Approval *ledger.Awaiting `json:"awaiting_approval,omitempty"`
}

// LogUnreadable is Description.LogUnreadable's text.
const LogUnreadable = "this login may not read the log (ledger_auditor, ledger_executor or ledger_admin may)"

// DecisionsUnreadable is Description.DecisionsUnreadable's text.
const DecisionsUnreadable = "this login may not read the audit trail (ledger_submitter reads its own principal's rows, " +
	"ledger_auditor and ledger_admin every row)"

// Describe reads request id as c's login sees it: ledger.ErrNotFound when
// it sees no such request. db is the pool c uses, for the audit trail and
// the log.
func Describe(ctx context.Context, c *ledger.Client, db ledger.DBTX, id uuid.UUID) (Description, error) {
	r, err := c.Get(ctx, id)
	if err != nil {
		return Description{}, err
	}
	d := Description{Request: r, Decisions: []Decision{}, Events: []TrailEvent{}}
	d.Decisions, err = Decisions(ctx, db, id)
	switch {
	case contract.SQLState(err) == contract.SQLStateInsufficientPriv:
		d.DecisionsUnreadable = DecisionsUnreadable
		d.Decisions = []Decision{}
	case err != nil:
		return Description{}, err
	}
	if r.State == ledger.StateAwaitingApproval {
		// A submitter may not call it and reads its own request's digest
		// nowhere else; a request decided since reads as not found.
		a, err := c.AwaitingApprovalOf(ctx, id)
		switch {
		case err == nil:
			d.Approval = a
		case errors.Is(err, ledger.ErrNotPermitted), errors.Is(err, ledger.ErrNotFound):
		default:
			return Description{}, err
		}
	}
	d.Events, d.Unsealed, err = Trail(ctx, db, id)
	switch {
	case contract.SQLState(err) == contract.SQLStateInsufficientPriv:
		d.LogUnreadable = LogUnreadable
		d.Events = []TrailEvent{}
	case err != nil:
		return Description{}, fmt.Errorf("read the events of %s: %w", id, err)
	}
	d.Attestation = NewestAttestation(r, d.Events)
	return d, nil
}

const queryRequestDecisions = `SELECT recorded_at, kind, event_type, attempt, decision, stage, reason_code,
       determining_policies, policy_digest, approver, state, error_kind
FROM ledger.audit_trail WHERE request_id = $1 ORDER BY position, kind`

// Decisions reads the audit trail's rows about request id, in order.
func Decisions(ctx context.Context, db ledger.DBTX, id uuid.UUID) ([]Decision, error) {
	rows, err := db.Query(ctx, queryRequestDecisions, id)
	if err != nil {
		return nil, fmt.Errorf("read the audit trail: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Decision, error) {
		var d Decision
		err := row.Scan(&d.Time, &d.Kind, &d.Event, &d.Attempt, &d.Decision, &d.Stage, &d.ReasonCode,
			&d.DeterminingPolicies, &d.PolicyDigest, &d.Approver, &d.State, &d.ErrorKind)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the audit trail: %w", err)
	}
	if out == nil {
		out = []Decision{}
	}
	return out, nil
}

// MaxTrail bounds the events Trail reads: a request's stream is short
// (ten-odd events), unless a tool recorded many (at most 1,000 a call).
const MaxTrail = 5000

// Trail reads the request's stream: its events as the record, and apart
// from them those that are below the sealed horizon but no leaf.
func Trail(ctx context.Context, db ledger.DBTX, id uuid.UUID) ([]TrailEvent, []Unsealed, error) {
	evs, err := ledger.ReadStreamSealed(ctx, db, contract.RequestStream(id.String()), 0, MaxTrail)
	if err != nil {
		return nil, nil, err
	}
	out := make([]TrailEvent, 0, len(evs))
	var unsealed []Unsealed
	for _, ev := range evs {
		if ev.Unsealed != "" {
			unsealed = append(unsealed, Unsealed{Version: ev.Version, Type: ev.Type, Position: ev.Position, Reason: ev.Unsealed})
			continue
		}
		out = append(out, TrailEvent{Version: ev.Version, Type: ev.Type, RecordedAt: ev.RecordedAt, Position: ev.Position,
			Metadata: ev.Metadata, Payload: ev.Payload, Leaf: ev.Leaf})
	}
	return out, unsealed, nil
}

// NewestAttestation reads the last attestation's envelope (of an
// attestation.signed or an execution.completed):
// its key id and statement (the DSSE payload). Without the log it is the
// digest alone, from the request row; nil when the request has none.
func NewestAttestation(r *ledger.Request, evs []TrailEvent) *Attestation {
	if r.AttestationDigest == nil {
		return nil
	}
	a := &Attestation{Digest: *r.AttestationDigest}
	for i := len(evs) - 1; i >= 0; i-- {
		if !contract.IsAttesting(evs[i].Type) {
			continue
		}
		// The event's payload: the key id and the DSSE envelope, as text.
		var p struct {
			KeyID    string `json:"key_id"`
			Envelope string `json:"envelope"`
		}
		var env struct {
			Payload string `json:"payload"`
		}
		if json.Unmarshal(evs[i].Payload, &p) != nil || json.Unmarshal([]byte(p.Envelope), &env) != nil {
			break
		}
		a.KeyID, a.Envelope = p.KeyID, json.RawMessage(p.Envelope)
		if st, err := base64.StdEncoding.DecodeString(env.Payload); err == nil && json.Valid(st) {
			a.Statement = st
		}
		break
	}
	return a
}
