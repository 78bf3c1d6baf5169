package readmodel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// TestDescribe: a request as its submitter sees it (no log: said so) and
// as an auditor (its events, in order); a request the login may not see,
// or none, is ledger.ErrNotFound.
func TestDescribe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	alice, auditor, bob := db.LoginRole(t, "alice", "ledger_submitter"), db.LoginRole(t, "", "ledger_auditor"), db.LoginRole(t, "bob", "ledger_submitter")
	client := func(r *testdb.Role) *ledger.Client {
		c := ledger.NewClient(r.Pool)
		t.Cleanup(c.Close)
		return c
	}
	id, err := client(alice).Submit(ctx, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}

	d, err := Describe(ctx, client(alice), alice.Pool, id)
	if err != nil || d.Request.ID != id || d.Request.Principal != "alice" || d.LogUnreadable != LogUnreadable ||
		d.Events == nil || len(d.Events) != 0 || d.Decisions == nil || d.Attestation != nil {
		t.Fatalf("as the submitter: %+v, %v", d, err)
	}
	d, err = Describe(ctx, client(auditor), auditor.Pool, id)
	if err != nil || d.LogUnreadable != "" || len(d.Events) == 0 || d.Events[0].Type != "tool.requested" || d.Events[0].Version != 1 || d.Unsealed != nil {
		t.Fatalf("as the auditor: %+v, %v", d, err)
	}
	for _, tc := range []struct {
		who  string
		role *testdb.Role
		id   uuid.UUID
	}{{"bob", bob, id}, {"alice", alice, uuid.New()}} {
		if _, err := Describe(ctx, client(tc.role), tc.role.Pool, tc.id); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%v as %s: %v", tc.id, tc.who, err)
		}
	}
}

// TestNewestAttestation: the last attestation.signed event gives the key
// id, the envelope byte for byte and its statement; without the log, the
// request row's digest alone.
func TestNewestAttestation(t *testing.T) {
	t.Parallel()
	digest := "sha256:ab"
	r := &ledger.Request{AttestationDigest: &digest}
	if a := NewestAttestation(&ledger.Request{}, nil); a != nil {
		t.Fatalf("no attestation: %+v", a)
	}
	if a := NewestAttestation(r, nil); a == nil || a.Digest != digest || a.Envelope != nil || a.KeyID != "" {
		t.Fatalf("without the log: %+v", a)
	}
	signed := func(keyID, statement string) TrailEvent {
		env, _ := json.Marshal(map[string]string{"payloadType": "application/vnd.in-toto+json", "payload": base64.StdEncoding.EncodeToString([]byte(statement))})
		p, _ := json.Marshal(map[string]string{"key_id": keyID, "envelope": string(env)})
		return TrailEvent{Type: "attestation.signed", Payload: p}
	}
	evs := []TrailEvent{{Type: "tool.requested", Payload: json.RawMessage(`{}`)}, signed("k1", `{"n":1}`), signed("k2", `{"n":2}`),
		{Type: "execution.finished", Payload: json.RawMessage(`{}`)}}
	a := NewestAttestation(r, evs)
	if a == nil || a.KeyID != "k2" || string(a.Statement) != `{"n":2}` || !json.Valid(a.Envelope) || a.Digest != digest {
		t.Fatalf("newest: %+v", a)
	}
	if a := NewestAttestation(r, []TrailEvent{signed("k3", "not json")}); a == nil || a.KeyID != "k3" || a.Statement != nil || a.Envelope == nil {
		t.Fatalf("a statement that is not JSON: %+v", a)
	}
}
