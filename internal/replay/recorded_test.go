package replay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"crypto/ed25519"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// TestReadAndStatement: Read finds a request's input as the tool got it
// and its last attestation; Statement accepts it only for that request,
// that input and the signing key.
func TestReadAndStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	db.ForgesEvents() // the recorded request is written by hand, not by a writer
	store := ledger.NewStore(db.Pool)
	id := uuid.New()
	appendTo := func(id uuid.UUID, typ string, payload map[string]any) {
		t.Helper()
		if _, err := store.Append(ctx, contract.RequestStream(id.String()), ledger.AnyVersion, ledger.NewEvent{Type: typ, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := Read(ctx, db.Pool, id); !errors.Is(err, ErrNoRequest) {
		t.Fatalf("no events: %v", err)
	}
	appendTo(id, "tool.requested", map[string]any{"tool": "acme.answer", "input": map[string]any{"q": "life", "n": 1}})
	if _, err := Read(ctx, db.Pool, id); err == nil || !strings.Contains(err.Error(), "no attestation yet") {
		t.Fatalf("no attestation: %v", err)
	}

	// The input as the tool got it: the event's input, byte for byte.
	input := []byte(`{"n":1,"q":"life"}`)
	key := testKey(t)
	signer := attest.NewSigner(key)
	for _, ex := range []string{"first", "last"} {
		_, env, _, err := signer.Sign(attest.NewStatement(input, []byte(`{}`), attest.Execution{AttestationID: ex, RequestID: id.String(),
			Tool: "acme.answer", Principal: "p", Executor: "sandbox_tier_a", Decision: attest.DecisionAllow, DecisionReason: "ok",
			StartedAt: time.Now(), FinishedAt: time.Now()}))
		if err != nil {
			t.Fatal(err)
		}
		appendTo(id, "attestation.signed", map[string]any{"envelope": string(env)})
	}
	rec, err := Read(ctx, db.Pool, id)
	if err != nil || string(rec.Input) != string(input) {
		t.Fatalf("Read: %q, %v", rec.Input, err)
	}
	st, err := rec.Statement(id, key.Public().(ed25519.PublicKey))
	if err != nil || st.Predicate.AttestationID != "last" {
		t.Fatalf("Statement: %+v, %v", st, err)
	}
	if _, err := rec.Statement(uuid.New(), key.Public().(ed25519.PublicKey)); err == nil || err.Error() != "the recorded request or input is not the attested one" {
		t.Errorf("another request: %v", err)
	}
	other := rec
	other.Input = []byte(`{"n":2,"q":"life"}`)
	if _, err := other.Statement(id, key.Public().(ed25519.PublicKey)); err == nil || err.Error() != "the recorded request or input is not the attested one" {
		t.Errorf("another input: %v", err)
	}
	if _, err := rec.Statement(id, testKey(t).Public().(ed25519.PublicKey)); err == nil || !strings.HasPrefix(err.Error(), "its attestation does not verify: ") {
		t.Errorf("another key: %v", err)
	}
}
