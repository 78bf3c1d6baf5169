package replay

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/ledger"
)

// queryRequestEvents reads a request's stream: each event's type and
// payload, and the input exactly as the executor passed it to the tool
// (ledger.claim_requests reads it the same way).
const queryRequestEvents = `SELECT type, payload::text, CASE WHEN version = 1 THEN (payload -> 'input')::text END
FROM ledger.events WHERE stream = $1 ORDER BY version`

// ErrNoRequest is Read's error for a request with no events.
var ErrNoRequest = errors.New("no such request")

// Recorded is what the ledger holds of a request for its replay.
type Recorded struct {
	Input    []byte // tool.requested's input, as the tool got it
	Envelope []byte // the last attestation's DSSE envelope (attestation.signed or execution.completed)
}

// Read reads request id's input and its last attestation.
func Read(ctx context.Context, db ledger.DBTX, id uuid.UUID) (Recorded, error) {
	rows, err := db.Query(ctx, queryRequestEvents, contract.RequestStream(id.String()))
	if err != nil {
		return Recorded{}, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var rec Recorded
	n := 0
	for rows.Next() {
		var typ, payload string
		var input *string
		if err := rows.Scan(&typ, &payload, &input); err != nil {
			return Recorded{}, fmt.Errorf("read events: %w", err)
		}
		n++
		switch {
		case typ == "tool.requested" && input != nil:
			rec.Input = []byte(*input)
		case contract.IsAttesting(typ):
			var p struct {
				Envelope string `json:"envelope"`
			}
			if err := json.Unmarshal([]byte(payload), &p); err != nil {
				return Recorded{}, fmt.Errorf("%s: %w", typ, err)
			}
			rec.Envelope = []byte(p.Envelope)
		}
	}
	if err := rows.Err(); err != nil {
		return Recorded{}, fmt.Errorf("read events: %w", err)
	}
	switch {
	case n == 0:
		return Recorded{}, ErrNoRequest
	case rec.Input == nil:
		return Recorded{}, errors.New("no tool.requested event with an input")
	case rec.Envelope == nil:
		return Recorded{}, errors.New("no attestation yet: the request is not final")
	}
	return rec, nil
}

// Statement verifies rec's attestation with pub and checks that it
// attests request id with rec's input; it returns the signed statement.
func (rec Recorded) Statement(id uuid.UUID, pub ed25519.PublicKey) (*attest.Statement, error) {
	st, err := attest.Verify(rec.Envelope, pub)
	if err != nil {
		return nil, fmt.Errorf("its attestation does not verify: %w", err)
	}
	if st.Predicate.RequestID != id.String() || SubjectDigest(st, attest.SubjectInput) != attest.Digest(rec.Input) {
		return nil, errors.New("the recorded request or input is not the attested one")
	}
	return st, nil
}

// SubjectDigest is the statement's digest of subject name, as
// attest.Digest formats one; "" when there is none.
func SubjectDigest(st *attest.Statement, name string) string {
	for _, s := range st.Subject {
		if s.Name == name && s.Digest["sha256"] != "" {
			return "sha256:" + s.Digest["sha256"]
		}
	}
	return ""
}
