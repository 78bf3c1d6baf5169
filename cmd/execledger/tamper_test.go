package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// The project's own tamper tests (issue 12): a superuser who drops the
// append-only triggers changes the ledger, and an auditor with a bundle and
// the public keys finds out offline, with the right fault code. Each case
// runs on a ledger of its own: alice's echo calls, bob's denied one.

// tampered is a ledger whose requests are final, attested and sealed.
type tampered struct {
	*transparency
	ids    []uuid.UUID // alice's echo calls, ids[i] with input {"text": "hi i"}
	denied uuid.UUID   // bob's echo, denied by policy
}

// sealedLedger runs a few requests to their sealed end. With stopFirst
// the sealer is stopped before they are submitted, so that a tamper can
// come before sealing (reseal seals then).
func sealedLedger(t *testing.T, stopFirst bool) *tampered {
	t.Helper()
	x := &tampered{transparency: startTransparency(t)}
	if stopFirst {
		x.stopSeal()
	} else {
		// A first request sealed under a checkpoint, so that the others'
		// attestations name one (the executor reads it again after 200 ms).
		first := x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "first"}})
		awaitFinal(t, x.alice, first)
		x.awaitSealed(t)
		time.Sleep(400 * time.Millisecond)
	}
	for i := range 3 {
		x.ids = append(x.ids, x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": fmt.Sprint("hi ", i)}}))
	}
	bob := x.submit(t, x.bob, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "no"}})
	for _, id := range x.ids {
		awaitFinal(t, x.alice, id)
	}
	awaitFinal(t, x.bob, bob)
	x.denied = bob
	if !stopFirst {
		x.awaitSealed(t)
		x.stopSeal()
	}
	x.stopExec()
	return x
}

// reseal runs a sealer with the log's key until every request is sealed.
func (x *tampered) reseal(t *testing.T) {
	t.Helper()
	signer, err := ledger.LoadNoteSigner(strings.TrimSuffix(x.logPub, ".pub"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := projector.New(x.execSQL.Pool, projector.Config{PollInterval: 20 * time.Millisecond},
		projector.Sealer(ledger.NewSealer(ledger.SealerConfig{Signer: signer, CheckpointInterval: 50 * time.Millisecond})))
	if err != nil {
		t.Fatal(err)
	}
	stop := runUntilStopped(t, "sealer", eng.Run)
	x.awaitSealed(t)
	stop()
}

// asSuperuser runs statements as the database's owner with the
// append-only triggers of the events and of the log disabled.
func (x *tampered) asSuperuser(t *testing.T, stmts ...string) {
	t.Helper()
	for _, tbl := range []string{"events", "log_leaves", "log_nodes", "checkpoints", "checkpoint_cosignatures"} {
		stmts = append([]string{"ALTER TABLE ledger." + tbl + " DISABLE TRIGGER ALL"}, stmts...)
	}
	for _, s := range stmts {
		if _, err := x.db.Pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// event reads one event of request id.
func (x *tampered) event(t *testing.T, id uuid.UUID, typ string) ledger.Event {
	t.Helper()
	return x.eventOf(t, "request:"+id.String(), typ)
}

// export writes the whole log's bundle as an auditor would.
func (x *tampered) export(t *testing.T, extra ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ledger.bundle")
	r := execute(t, x.auditor, "", append([]string{"export", "--out", file, "--wait", "0s"}, extra...)...)
	if r.code != exitOK {
		t.Fatalf("export: %+v", r)
	}
	return file
}

// verifyFault verifies file offline and wants exit 3 with code.
func (x *tampered) verifyFault(t *testing.T, file, code string, extra ...string) *bundle.Fault {
	t.Helper()
	args := append([]string{"verify", file, "--json", "--log-key", x.logPub, "--attest-key", x.attestPub}, extra...)
	rep := verifyJSON(t, args, exitNotOK)
	if rep.OK || rep.Fault == nil || rep.Fault.Code != code {
		t.Fatalf("verify: %+v, want fault %s", rep.Fault, code)
	}
	return rep.Fault
}

// setAttestation replaces the attestation members of request id's
// attestation (attestation.signed, or execution.completed in the compact
// grammar) with envelope (and its digest), as a superuser would.
func (x *tampered) setAttestation(t *testing.T, id uuid.UUID, envelope []byte, keyID string) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{"request_id": id, "attestation_digest": attest.Digest(envelope),
		"key_id": keyID, "envelope": string(envelope)})
	if err != nil {
		t.Fatal(err)
	}
	x.asSuperuser(t)
	if _, err := x.db.Pool.Exec(context.Background(), `UPDATE ledger.events SET payload = (payload::jsonb || $1::jsonb)::json
WHERE stream = $2 AND type IN ('attestation.signed', 'execution.completed')`, string(payload), "request:"+id.String()); err != nil {
		t.Fatal(err)
	}
}

func TestTamperChangeOneByteOfAPayload(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	e := x.event(t, x.ids[1], "tool.requested")
	changed := bytes.Replace(e.Payload, []byte("hi 1"), []byte("hi 7"), 1)
	if bytes.Equal(changed, e.Payload) {
		t.Fatalf("nothing to change in %s", e.Payload)
	}
	x.asSuperuser(t)
	if _, err := x.db.Pool.Exec(context.Background(), `UPDATE ledger.events SET payload = $1::json WHERE position = $2`,
		string(changed), e.Position); err != nil {
		t.Fatal(err)
	}
	f := x.verifyFault(t, x.export(t), bundle.HashMismatch)
	if f.Stream != e.Stream || f.Version != e.Version {
		t.Errorf("fault at %s version %d, want %s version %d", f.Stream, f.Version, e.Stream, e.Version)
	}
	// The live database says the same, from the first leaf.
	r := execute(t, x.auditor, "", "verify", "--db", "--log-key", x.logPub, "--attest-key", x.attestPub)
	if r.code != exitNotOK || !strings.HasPrefix(r.stdout, "not ok: hash_mismatch") {
		t.Errorf("verify --db: %+v", r)
	}
}

func TestTamperDeleteAnEvent(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	e := x.event(t, x.ids[0], "request.decided")
	x.asSuperuser(t, fmt.Sprintf(`DELETE FROM ledger.events WHERE position = %d`, e.Position))
	f := x.verifyFault(t, x.export(t), bundle.MissingEvent)
	if f.Leaf == nil {
		t.Errorf("fault %+v names no leaf", f)
	}
}

func TestTamperSwapTwoEvents(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	a, b := x.event(t, x.ids[0], "tool.requested"), x.event(t, x.ids[2], "tool.requested")
	// The events trade places in the delivery order (tx_id, position),
	// which the log's leaves point at: each leaf now holds the other's
	// event.
	x.asSuperuser(t, fmt.Sprintf(`UPDATE ledger.events SET tx_id = '%d', position = -1 WHERE position = %d`, a.TxID, a.Position),
		fmt.Sprintf(`UPDATE ledger.events SET tx_id = '%d', position = %d WHERE position = %d`, a.TxID, a.Position, b.Position),
		fmt.Sprintf(`UPDATE ledger.events SET tx_id = '%d', position = %d WHERE position = -1`, b.TxID, b.Position))
	x.verifyFault(t, x.export(t), bundle.Reordered)
}

func TestTamperTruncateTheTail(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	x.asSuperuser(t, `DELETE FROM ledger.events e USING (
    SELECT tx_id, position FROM ledger.log_leaves ORDER BY leaf_index DESC LIMIT 3) t
WHERE e.tx_id = t.tx_id AND e.position = t.position`)
	x.verifyFault(t, x.export(t), bundle.MissingEvent)
}

// TestTamperRewriteAndResign: history rewritten (a request erased) and
// every checkpoint signed again with the log's own key. The witness, which had cosigned
// the log before, refuses; and an auditor who requires that witness's
// cosignature finds the newest checkpoint without it.
func TestTamperRewriteAndResign(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	dir := t.TempDir()
	wkey, state := filepath.Join(dir, "witness.key"), filepath.Join(dir, "witness.state")
	if _, err := ledger.GenerateWitnessKey("witness.test", wkey); err != nil {
		t.Fatal(err)
	}
	witness := []string{"witness", "--once", "--log-key", x.logPub, "--key", wkey, "--state", state}
	if r := execute(t, x.auditor, "", witness...); r.code != exitOK {
		t.Fatalf("witness: %+v", r)
	}
	// Request 1 is erased, and the log sealed and signed again without it.
	x.asSuperuser(t,
		fmt.Sprintf(`DELETE FROM ledger.events WHERE stream = 'request:%s'`, x.ids[1]),
		`DELETE FROM ledger.checkpoint_cosignatures`, `DELETE FROM ledger.checkpoints`,
		`DELETE FROM ledger.log_nodes`, `DELETE FROM ledger.log_leaves`,
		`UPDATE ledger.projections SET tx_id = '0', position = 0 WHERE name = 'log'`)
	x.reseal(t)

	// The attestations signed before name checkpoints of the old log,
	// which the new one does not have.
	file := x.export(t)
	x.verifyFault(t, file, bundle.InconsistentCheckpoints)
	r := execute(t, x.auditor, "", witness...)
	if r.code != exitNotOK || !strings.Contains(r.stderr, "REFUSED") {
		t.Fatalf("the witness over the rewritten log: %+v", r)
	}
	f := x.verifyFault(t, file, bundle.BadSignature, "--witness-key", wkey+".pub")
	if !strings.Contains(f.Message, "witness") {
		t.Errorf("fault %+v does not name the witness", f)
	}
}

func TestTamperSwapAnEnvelopesPayloadType(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, true)
	var env attest.Envelope
	if err := json.Unmarshal(x.envelope(t, x.ids[0]), &env); err != nil {
		t.Fatal(err)
	}
	env.PayloadType = "application/json"
	swapped, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	x.setAttestation(t, x.ids[0], swapped, env.Signatures[0].KeyID)
	x.reseal(t)
	f := x.verifyFault(t, x.export(t), bundle.BadSignature)
	if f.Stream != "request:"+x.ids[0].String() {
		t.Errorf("fault at %s, want request %s", f.Stream, x.ids[0])
	}
}

func TestTamperSignAnAttestationWithAForeignKey(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, true)
	st, err := attest.Verify(x.envelope(t, x.ids[0]), x.attestPublic(t))
	if err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(t.TempDir(), "foreign.key")
	if _, err := attest.GenerateKeyFiles(foreign, foreign+".pub"); err != nil {
		t.Fatal(err)
	}
	s, err := attest.LoadSigner(foreign)
	if err != nil {
		t.Fatal(err)
	}
	_, envJSON, _, err := s.Sign(*st)
	if err != nil {
		t.Fatal(err)
	}
	x.setAttestation(t, x.ids[0], envJSON, s.KeyID())
	x.reseal(t)
	x.verifyFault(t, x.export(t), bundle.UnknownKey)
}

// TestTamperChangeAnOutputBeforeSealing: a result changed before the
// sealer saw it is sealed as changed, and its attestation no longer
// matches it.
func TestTamperChangeAnOutputBeforeSealing(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, true)
	e := x.event(t, x.ids[2], "execution.completed")
	changed := bytes.Replace(e.Payload, []byte("hi 2"), []byte("hi 8"), 1)
	if bytes.Equal(changed, e.Payload) {
		t.Fatalf("no output to change in %s", e.Payload)
	}
	x.asSuperuser(t)
	if _, err := x.db.Pool.Exec(context.Background(), `UPDATE ledger.events SET payload = $1::json WHERE position = $2`,
		string(changed), e.Position); err != nil {
		t.Fatal(err)
	}
	x.reseal(t)
	x.verifyFault(t, x.export(t), bundle.SubjectMismatch)
}

// TestTamperClaimALeafBeyondTheCheckpoint: a bundle that adds an event at
// a leaf the checkpoint does not cover.
func TestTamperClaimALeafBeyondTheCheckpoint(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	file := x.export(t)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var size uint64
	var lastEvent map[string]any
	for _, l := range lines {
		var r map[string]any
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		switch r["kind"] {
		case "checkpoint":
			size = uint64(r["size"].(float64))
		case "event":
			lastEvent = r
		}
	}
	lastEvent["leaf"] = size
	forged, err := json.Marshal(lastEvent)
	if err != nil {
		t.Fatal(err)
	}
	rng := fmt.Appendf(nil, `{"kind":"range","begin":%d,"end":%d,"size":%d,"left":[],"right":[]}`, size, size+1, size)
	out := append(bytes.Join(lines[:len(lines)-1], []byte("\n")), '\n')
	out = append(append(append(out, rng...), '\n'), forged...)
	out = append(append(append(out, '\n'), lines[len(lines)-1]...), '\n')
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	x.verifyFault(t, file, bundle.InclusionFailed)
}

// TestTamperDeleteAnAttestation: the attestation of a final outcome
// deleted after sealing. Export does not fall back to an older
// checkpoint that would hide it: the whole log's bundle misses a leaf,
// the request's own misses its attestation.
func TestTamperDeleteAnAttestation(t *testing.T) {
	t.Parallel()
	x := sealedLedger(t, false)
	// The denial's: an allowed call's outcome is its attestation
	// (execution.completed), which leaves nothing to miss.
	e := x.event(t, x.denied, "attestation.signed")
	x.asSuperuser(t, fmt.Sprintf(`DELETE FROM ledger.events WHERE position = %d`, e.Position))
	x.verifyFault(t, x.export(t), bundle.MissingEvent)
	x.verifyFault(t, x.export(t, "--request", x.denied.String()), bundle.MissingAttestation)
}

// envelope is request id's attestation envelope as stored.
func (x *tampered) envelope(t *testing.T, id uuid.UUID) []byte {
	t.Helper()
	var p struct{ Envelope string }
	if err := json.Unmarshal(x.event(t, id, "execution.completed").Payload, &p); err != nil {
		t.Fatal(err)
	}
	return []byte(p.Envelope)
}

func (x *tampered) attestPublic(t *testing.T) ed25519.PublicKey {
	t.Helper()
	pub, err := attest.LoadPublicKey(x.attestPub)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}
