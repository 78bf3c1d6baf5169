package bundle

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// fixture is a log of six interleaved requests (the second denied by
// policy), with channel messages between their events and a checkpoint
// every seven events, each cosigned by the witness.
func fixture(t *testing.T, edit func(reqs []*testRequest)) (*testLog, []*testRequest) {
	t.Helper()
	l := newTestLog(t, 1)
	reqs := make([]*testRequest, 6)
	for i := range reqs {
		reqs[i] = l.newRequest()
	}
	reqs[1].deny = true
	if edit != nil {
		edit(reqs)
	}
	l.record(reqs, 1, 7)
	return l, reqs
}

// verify verifies b with keys, from a file and record by record, and
// checks that both give the same report.
func verify(t *testing.T, b []byte, keys Keys) Report {
	t.Helper()
	rep, err := Verify(context.Background(), bytes.NewReader(b), keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range splitLines(b) {
		r, err := ParseRecord([]byte(s))
		if err != nil {
			v.feed(prepared{fault: fault(Malformed, "%v", err)})
			continue
		}
		if !v.Feed(r) {
			break
		}
	}
	if fed := v.Report(); !sameReport(fed, rep) {
		t.Fatalf("Verify reports\n%s\nFeed reports\n%s", reportJSON(rep), reportJSON(fed))
	}
	return rep
}

func sameReport(a, b Report) bool { return reportJSON(a) == reportJSON(b) }

func reportJSON(r Report) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// where is a fault's expected place; nil and zero fields must be unset.
type where struct {
	leaf       *uint64
	stream     string
	version    int64
	checkpoint *uint64
}

func u(i uint64) *uint64 { return &i }

// wantFault checks that rep reports code at w, with a message containing
// msg.
func wantFault(t *testing.T, rep Report, code string, w where, msg string) {
	t.Helper()
	f := rep.Fault
	if rep.OK || f == nil {
		t.Fatalf("verified OK, want %s: %s", code, reportJSON(rep))
	}
	eq := func(a, b *uint64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	if f.Code != code || !eq(f.Leaf, w.leaf) || f.Stream != w.stream || f.Version != w.version || !eq(f.Checkpoint, w.checkpoint) {
		t.Fatalf("fault %s\nwant %s at leaf %v stream %q version %d checkpoint %v", f, code, deref(w.leaf), w.stream, w.version, deref(w.checkpoint))
	}
	if !strings.Contains(f.Message, msg) {
		t.Fatalf("fault %s\nwant a message containing %q", f, msg)
	}
}

func deref(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

func splitLines(b []byte) []string {
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func joinLines(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

// lineOf returns the index of the event line of leaf.
func lineOf(t *testing.T, ls []string, leaf uint64) int {
	t.Helper()
	for i, s := range ls {
		if r, err := ParseRecord([]byte(s)); err == nil {
			if e, ok := r.(*Event); ok && e.Leaf == leaf {
				return i
			}
		}
	}
	t.Fatalf("no event at leaf %d", leaf)
	return 0
}

// cpLine returns the index of the checkpoint line of size.
func cpLine(t *testing.T, ls []string, size uint64) int {
	t.Helper()
	for i, s := range ls {
		if r, err := ParseRecord([]byte(s)); err == nil {
			if c, ok := r.(*Checkpoint); ok && c.Size == size {
				return i
			}
		}
	}
	t.Fatalf("no checkpoint of size %d", size)
	return 0
}

// edit replaces line i by the record f makes of it.
func edit[R Record](t *testing.T, ls []string, i int, f func(R)) {
	t.Helper()
	r, err := ParseRecord([]byte(ls[i]))
	if err != nil {
		t.Fatal(err)
	}
	f(r.(R))
	var buf bytes.Buffer
	if err := appendRecord(&buf, r); err != nil {
		t.Fatal(err)
	}
	ls[i] = strings.TrimSuffix(buf.String(), "\n")
}

func TestVerifyFullBundle(t *testing.T) {
	l, _ := fixture(t, nil)
	keys := l.keys()
	keys.Witnesses = append(keys.Witnesses, l.witnessKey)
	rep := verify(t, l.full(), keys)
	if !rep.OK {
		t.Fatalf("not OK: %s", rep.Fault)
	}
	newest := l.checkpoints[len(l.checkpoints)-1]
	want := Report{
		OK: true, Origin: testOrigin, Scope: &Scope{Full: true}, Events: int64(len(l.events)), Requests: 6, Attestations: 6,
		Checkpoints: int64(len(l.checkpoints)), NewestSize: newest.Size, NewestRoot: newest.Root, Witnesses: 1,
	}
	if !sameReport(rep, want) {
		t.Fatalf("report\n%s\nwant\n%s", reportJSON(rep), reportJSON(want))
	}
	if len(l.checkpoints) < 4 {
		t.Fatalf("the fixture has %d checkpoints; it should exercise consistency proofs", len(l.checkpoints))
	}
}

func TestVerifyPartialBundle(t *testing.T) {
	l, reqs := fixture(t, nil)
	for _, r := range reqs[:2] { // allowed and denied
		rep := verify(t, l.partial(r.id), l.keys())
		if !rep.OK {
			t.Fatalf("request %s: not OK: %s", r.id, rep.Fault)
		}
		if rep.Events != int64(len(r.leaves)) || rep.Requests != 1 || rep.Attestations != 1 || rep.Checkpoints != 2 {
			t.Fatalf("request %s: %s", r.id, reportJSON(rep))
		}
	}
}

func TestVerifyRecords(t *testing.T) {
	l, _ := fixture(t, nil)
	ls := splitLines(l.full())
	var got []int64
	rep, err := VerifyRecords(context.Background(), func() (Record, error) {
		if len(ls) == 0 {
			return nil, io.EOF
		}
		r, err := ParseRecord([]byte(ls[0]))
		ls = ls[1:]
		return r, err
	}, l.keys(), func(n int64) { got = append(got, n) })
	if err != nil || !rep.OK {
		t.Fatalf("%v %s", err, reportJSON(rep))
	}
	if len(got) == 0 || got[len(got)-1] != rep.Events {
		t.Fatalf("progress %v, want it to end at %d", got, rep.Events)
	}
}

// TestEventFaults edits one event record of a good bundle, as someone
// altering an export would.
func TestEventFaults(t *testing.T) {
	l, reqs := fixture(t, nil)
	r := reqs[0]
	requested, finished := r.leaves[typeRequested], r.leaves[typeFinished]
	stream := requestPrefix + r.id
	for _, tc := range []struct {
		name  string
		edit  func(ls []string) []string
		code  string
		where where
		msg   string
	}{{
		name: "a payload byte flipped",
		edit: func(ls []string) []string {
			edit(t, ls, lineOf(t, ls, requested), func(e *Event) { e.Payload = bytes.Replace(e.Payload, []byte("deploy"), []byte("deplox"), 1) })
			return ls
		},
		code: HashMismatch, where: where{leaf: u(requested), stream: stream, version: 1}, msg: "the event's fields hash to",
	}, {
		name: "the leaf hash edited",
		edit: func(ls []string) []string {
			edit(t, ls, lineOf(t, ls, finished), func(e *Event) { e.LeafHash[5] ^= 1 })
			return ls
		},
		code: HashMismatch, where: where{leaf: u(finished), stream: stream, version: 5}, msg: "the log sealed",
	}, {
		name: "two event records swapped",
		edit: func(ls []string) []string {
			i := lineOf(t, ls, requested)
			ls[i], ls[i+1] = ls[i+1], ls[i]
			return ls
		},
		code: Reordered, where: where{leaf: u(requested), stream: stream, version: 1}, msg: "out of order",
	}, {
		name: "an event moved to the leaf before it",
		edit: func(ls []string) []string {
			moved := body(t, ls, finished+1)
			edit(t, ls, lineOf(t, ls, finished), func(e *Event) { moveBody(e, moved) })
			return ls
		},
		code: Reordered, where: where{leaf: u(finished), stream: l.events[finished+1].Stream, version: l.events[finished+1].Version},
		msg: "leaf " + itoa(finished) + " holds the event the log sealed at leaf " + itoa(finished+1),
	}, {
		name: "an earlier event copied over a later one",
		edit: func(ls []string) []string {
			moved := body(t, ls, requested)
			edit(t, ls, lineOf(t, ls, finished), func(e *Event) { moveBody(e, moved) })
			return ls
		},
		code: Reordered, where: where{leaf: u(finished), stream: stream, version: 1}, msg: "holds the event the log sealed at leaf " + itoa(requested),
	}, {
		name: "an event dropped",
		edit: func(ls []string) []string {
			i := lineOf(t, ls, finished)
			return append(ls[:i], ls[i+1:]...)
		},
		code: MissingEvent, where: where{leaf: u(finished)}, msg: "leaf " + itoa(finished) + " is absent",
	}, {
		name: "an event's fields and hashes rewritten",
		edit: func(ls []string) []string {
			edit(t, ls, lineOf(t, ls, r.leaves["request.claimed"]), func(e *Event) {
				e.Payload = bytes.Replace(e.Payload, []byte("executor-1"), []byte("executor-9"), 1)
				rehash(e)
			})
			return ls
		},
		code: InclusionFailed, where: where{leaf: u(0), checkpoint: u(uint64(len(l.events)))}, msg: "do not lead to the root of checkpoint",
	}, {
		name: "the end record's count edited",
		edit: func(ls []string) []string {
			edit(t, ls, len(ls)-1, func(e *End) { e.Events-- })
			return ls
		},
		code: Malformed, msg: "the end record counts",
	}, {
		name: "the end dropped",
		edit: func(ls []string) []string { return ls[:len(ls)-1] },
		code: Malformed, msg: "cut short",
	}, {
		name: "a line that is not a record",
		edit: func(ls []string) []string {
			ls[lineOf(t, ls, 3)] = `{"kind":"event","leaf":"3"}`
			return ls
		},
		code: Malformed, msg: "not an integer",
	}, {
		name: "an unknown record kind",
		edit: func(ls []string) []string {
			return append(ls[:2], append([]string{`{"kind":"annotation","text":"hi"}`}, ls[2:]...)...)
		},
		code: Malformed, msg: `unknown record kind "annotation"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ls := tc.edit(splitLines(l.full()))
			wantFault(t, verify(t, joinLines(ls), l.keys()), tc.code, tc.where, tc.msg)
		})
	}
}

// body returns the event at leaf.
func body(t *testing.T, ls []string, leaf uint64) Event {
	t.Helper()
	r, err := ParseRecord([]byte(ls[lineOf(t, ls, leaf)]))
	if err != nil {
		t.Fatal(err)
	}
	return *r.(*Event)
}

// moveBody puts the event from into e, keeping e's leaf and leaf hash.
func moveBody(e *Event, from Event) {
	from.Leaf, from.Position, from.LeafHash = e.Leaf, e.Position, e.LeafHash
	*e = from
}

// rehash recomputes e's hashes after an edit, as a forger would.
func rehash(e *Event) {
	enc := e.encoding(nil)
	e.Hash, e.LeafHash = ledger.EncodingHash(enc), ledger.LeafHash(enc)
}

func itoa(i uint64) string { b, _ := json.Marshal(i); return string(b) }

func TestPartialBundleFaults(t *testing.T) {
	l, reqs := fixture(t, nil)
	r := reqs[2]
	stream := requestPrefix + r.id
	size := uint64(len(l.events))
	t.Run("a leaf beyond the checkpoint", func(t *testing.T) {
		ls := splitLines(l.partial(r.id))
		i := lineOf(t, ls, r.leaves[typeAttested])
		edit(t, ls, i-1, func(p *Range) { p.Begin, p.End = size, size+1 })
		edit(t, ls, i, func(e *Event) { e.Leaf = size })
		wantFault(t, verify(t, joinLines(ls), l.keys()), InclusionFailed, where{leaf: u(size), checkpoint: u(size)},
			"claims leaf "+itoa(size)+" beyond checkpoint "+itoa(size))
	})
	t.Run("an event and its range dropped", func(t *testing.T) {
		ls := splitLines(l.partial(r.id))
		i := lineOf(t, ls, r.leaves["execution.started"])
		ls = append(ls[:i-1], ls[i+1:]...)
		wantFault(t, verify(t, joinLines(ls), l.keys()), MissingEvent, where{leaf: u(r.leaves[typeFinished]), stream: stream, version: 4},
			stream+" version 4 is absent")
	})
	t.Run("the checkpoint the attestation names left out", func(t *testing.T) {
		ls := splitLines(l.partial(r.id))
		named := namedCheckpoint(t, l.events[r.leaves[typeAttested]])
		i := cpLine(t, ls, named.Size)
		ls = append(ls[:i], ls[i+1:]...)   // the checkpoint
		ls = append(ls[:i+1], ls[i+2:]...) // the consistency proof after the newest
		wantFault(t, verify(t, joinLines(ls), l.keys()), InconsistentCheckpoints,
			where{leaf: u(r.leaves[typeAttested]), stream: stream, version: 6, checkpoint: u(named.Size)}, "not one of the bundle's checkpoints")
	})
	t.Run("the request it is of absent", func(t *testing.T) {
		b := l.partial(r.id)
		b = bytes.Replace(b, []byte(`"request":"`+r.id), []byte(`"request":"`+reqs[3].id), 1)
		wantFault(t, verify(t, b, l.keys()), MissingEvent, where{stream: requestPrefix + reqs[3].id}, "whose stream it does not hold")
	})
}

func TestCheckpointFaults(t *testing.T) {
	l, _ := fixture(t, nil)
	second, newest := l.checkpoints[1].Size, l.checkpoints[len(l.checkpoints)-1].Size
	withWitness := l.keys()
	withWitness.Witnesses = []note.Verifier{l.witnessKey}
	for _, tc := range []struct {
		name  string
		edit  func(ls []string) []string
		keys  Keys
		code  string
		where where
		msg   string
	}{{
		name: "a checkpoint re-signed with a foreign key",
		edit: func(ls []string) []string {
			foreign, _, _ := l.noteKey(testOrigin)
			edit(t, ls, cpLine(t, ls, second), func(c *Checkpoint) {
				*c = l.signCheckpoint(c.Size, c.Root, foreign)
			})
			return ls
		},
		code: UnknownKey, where: where{checkpoint: u(second)}, msg: "signed only by keys not given",
	}, {
		name: "the log's signature altered",
		edit: func(ls []string) []string {
			edit(t, ls, cpLine(t, ls, second), func(c *Checkpoint) { c.Note = alterSignature(t, c.Note, testOrigin) })
			return ls
		},
		code: BadSignature, where: where{checkpoint: u(second)}, msg: "the log key's signature does not verify",
	}, {
		name: "a witness cosignature altered",
		edit: func(ls []string) []string {
			edit(t, ls, cpLine(t, ls, second), func(c *Checkpoint) { c.Note = alterSignature(t, c.Note, "witness.test") })
			return ls
		},
		keys: withWitness, code: BadSignature, where: where{checkpoint: u(second)}, msg: "the cosignature of witness witness.test",
	}, {
		name: "the newest checkpoint's cosignature missing",
		edit: func(ls []string) []string {
			edit(t, ls, cpLine(t, ls, newest), func(c *Checkpoint) { *c = l.signCheckpoint(c.Size, c.Root, l.logSigner) })
			return ls
		},
		keys: withWitness, code: BadSignature, where: where{checkpoint: u(newest)},
		msg: "checkpoint " + itoa(newest) + " has no valid cosignature from witness " + Fingerprint(l.witnessKey),
	}, {
		name: "a checkpoint whose root is inconsistent with the previous",
		edit: func(ls []string) []string {
			edit(t, ls, cpLine(t, ls, second), func(c *Checkpoint) {
				forked := forkRoot(t, l, c.Size)
				*c = l.signCheckpoint(c.Size, forked, l.logSigner, l.witness)
			})
			return ls
		},
		code: InconsistentCheckpoints, where: where{checkpoint: u(second)}, msg: "does not extend checkpoint " + itoa(l.checkpoints[0].Size),
	}, {
		name: "a consistency proof dropped",
		edit: func(ls []string) []string {
			i := cpLine(t, ls, second)
			return append(ls[:i+1], ls[i+2:]...)
		},
		code: InconsistentCheckpoints, where: where{checkpoint: u(second)}, msg: "no consistency proof from checkpoint",
	}, {
		name: "a consistency proof given twice",
		edit: func(ls []string) []string {
			i := cpLine(t, ls, second) + 1
			return append(ls[:i+1], ls[i:]...)
		},
		code: InconsistentCheckpoints, where: where{checkpoint: u(second)}, msg: "which is not the pair of checkpoints it follows",
	}, {
		name: "a checkpoint record whose size is not the signed one",
		edit: func(ls []string) []string {
			edit(t, ls, cpLine(t, ls, second), func(c *Checkpoint) { c.Size++ })
			return ls
		},
		code: BadSignature, where: where{checkpoint: u(second + 1)}, msg: "signs size " + itoa(second),
	}, {
		name: "the bundle of another log",
		edit: func(ls []string) []string {
			edit(t, ls, 0, func(h *Header) { h.Origin = "other.test/log" })
			return ls
		},
		code: UnknownKey, msg: `the bundle is of log "other.test/log"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			keys := tc.keys
			if keys.Log == nil {
				keys = l.keys()
			}
			ls := tc.edit(splitLines(l.full()))
			wantFault(t, verify(t, joinLines(ls), keys), tc.code, tc.where, tc.msg)
		})
	}
}

// alterSignature flips a bit of the signature (not of its key hash) on
// the note's signature line by name.
func alterSignature(t *testing.T, msg, name string) string {
	t.Helper()
	ls := strings.Split(msg, "\n")
	for i, s := range ls {
		if sig, ok := strings.CutPrefix(s, "— "+name+" "); ok {
			b := []byte(sig)
			b[10] = map[bool]byte{true: 'B', false: 'A'}[b[10] == 'A']
			ls[i] = "— " + name + " " + string(b)
			return strings.Join(ls, "\n")
		}
	}
	t.Fatalf("no signature by %s in %q", name, msg)
	return ""
}

// forkRoot is the root of a log whose first size leaves differ from l's
// in the first one: what a log that rewrote history would sign.
func forkRoot(t *testing.T, l *testLog, size uint64) []byte {
	t.Helper()
	fork := *l
	fork.events = append([]Event(nil), l.events[:size]...)
	fork.events[0].LeafHash[0] ^= 1
	return fork.root(size)
}

// TestAttestationFaults records requests whose attestation is wrong, as a
// faulty or malicious executor would sign it, and verifies the full bundle.
func TestAttestationFaults(t *testing.T) {
	foreign := attest.NewSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	for _, tc := range []struct {
		name   string
		edit   func(r *testRequest)
		code   string
		atType string // the event the fault is at
		named  bool   // and the checkpoint the attestation names
		msg    string
	}{{
		name: "signed by a foreign key", edit: func(r *testRequest) { r.signer = foreign },
		code: UnknownKey, atType: typeAttested, msg: "none of them a given attestation key",
	}, {
		name: "the envelope's payloadType changed",
		edit: func(r *testRequest) {
			r.envelope = func(env []byte) []byte {
				return bytes.Replace(env, []byte(attest.PayloadType), []byte("application/json"), 1)
			}
		},
		code: BadSignature, atType: typeAttested, msg: `payloadType "application/json"`,
	}, {
		name: "the envelope's signature altered",
		edit: func(r *testRequest) {
			r.envelope = func(env []byte) []byte {
				i := bytes.Index(env, []byte(`"sig":"`)) + 10
				env[i] = map[bool]byte{true: 'B', false: 'A'}[env[i] == 'A']
				return env
			}
		},
		code: BadSignature, atType: typeAttested, msg: "no valid signature",
	}, {
		name: "the output subject does not match",
		edit: func(r *testRequest) {
			r.statement = func(st *attest.Statement) {
				*st = attest.NewStatement([]byte(r.input), []byte(`{"echoed":{}}`), st.Predicate)
			}
		},
		code: SubjectMismatch, atType: typeAttested, msg: "output has sha256",
	}, {
		name: "the attestation says it failed",
		edit: func(r *testRequest) {
			r.statement = func(st *attest.Statement) { st.Predicate.Success, st.Predicate.ErrorKind = false, "runtime_failure" }
		},
		code: SubjectMismatch, atType: typeAttested, msg: "the attestation says success false",
	}, {
		name: "of another request",
		edit: func(r *testRequest) {
			r.statement = func(st *attest.Statement) { st.Predicate.RequestID = "0193aaaa-0000-7000-8000-000000000000" }
		},
		code: SubjectMismatch, atType: typeAttested, msg: "the attestation is of request",
	}, {
		name: "the attestation event names another request",
		edit: func(r *testRequest) {
			r.edit = map[string]func(string) string{typeAttested: func(p string) string {
				return strings.Replace(p, `"request_id":"`+r.id[:4], `"request_id":"ffff`, 1)
			}}
		},
		code: SubjectMismatch, atType: typeAttested, msg: "the attestation event names request",
	}, {
		name: "the attestation digest is not the envelope's",
		edit: func(r *testRequest) {
			r.edit = map[string]func(string) string{typeAttested: func(p string) string {
				return strings.Replace(p, `"attestation_digest":"sha256:`, `"attestation_digest":"sha256:0`, 1)
			}}
		},
		code: SubjectMismatch, atType: typeAttested, msg: "the envelope's digest is",
	}, {
		name: "the input digest is not the input's",
		edit: func(r *testRequest) {
			r.edit = map[string]func(string) string{typeRequested: func(p string) string {
				return strings.Replace(p, `"input_digest" : "sha256:`, `"input_digest" : "sha256:0`, 1)
			}}
		},
		code: SubjectMismatch, atType: typeRequested, msg: "records input_digest",
	}, {
		name: "the attestation names a checkpoint of another log",
		edit: func(r *testRequest) {
			r.statement = func(st *attest.Statement) { st.Predicate.LogCheckpoint.Origin = "other.test/log" }
		},
		code: InconsistentCheckpoints, atType: typeAttested, named: true, msg: "not one of the bundle's checkpoints",
	}, {
		name: "a final outcome with no attestation", edit: func(r *testRequest) { r.noAttestation = true },
		code: MissingAttestation, atType: typeFinished, msg: "holds no attestation of it",
	}, {
		name: "an event after the attestation", edit: func(r *testRequest) { r.trailing = []string{"execution.started"} },
		code: Reordered, atType: "execution.started", msg: "execution.started follows the attestation",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l, reqs := fixture(t, func(reqs []*testRequest) { tc.edit(reqs[3]) })
			r := reqs[3]
			leaf := r.leaves[tc.atType]
			w := where{leaf: u(leaf), stream: requestPrefix + r.id, version: l.events[leaf].Version}
			if tc.named {
				w.checkpoint = u(namedCheckpoint(t, l.events[leaf]).Size)
			}
			wantFault(t, verify(t, l.full(), l.keys()), tc.code, w, tc.msg)
		})
	}
}

func TestVerifyErrors(t *testing.T) {
	if _, err := Verify(context.Background(), strings.NewReader(""), Keys{}, nil); err == nil {
		t.Fatal("no error without a log key")
	}
	l, _ := fixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(ctx, bytes.NewReader(l.full()), l.keys(), nil); err == nil {
		t.Fatal("no error with a cancelled context")
	}
	rep, err := Verify(context.Background(), strings.NewReader(""), l.keys(), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFault(t, rep, Malformed, where{}, "cut short")
}

// TestAttestationNamesLaterCheckpoint checks an attestation that names a
// checkpoint holding its own leaf: signed before the log could have
// sealed it.
func TestAttestationNamesLaterCheckpoint(t *testing.T) {
	l, _ := fixture(t, nil)
	v, err := NewVerifier(l.keys())
	if err != nil {
		t.Fatal(err)
	}
	c := l.checkpoints[1]
	v.checkpoints = []checkpoint{{size: l.checkpoints[0].Size, root: l.checkpoints[0].Root}, {size: c.Size, root: c.Root}}
	e := &Event{Leaf: c.Size - 1, Stream: "request:x", Version: 6}
	f := v.namedCheckpoint(&attest.LogCheckpoint{Origin: testOrigin, Size: c.Size, RootHash: base64.StdEncoding.EncodeToString(c.Root)}, e)
	wantFault(t, Report{Fault: f}, Reordered, where{leaf: u(c.Size - 1), stream: "request:x", version: 6, checkpoint: u(c.Size)},
		"which already holds the attestation's own leaf")
	e.Leaf = c.Size
	if f := v.namedCheckpoint(&attest.LogCheckpoint{Origin: testOrigin, Size: c.Size, RootHash: base64.StdEncoding.EncodeToString(c.Root)}, e); f != nil {
		t.Fatal(f)
	}
}

// TestVerifyBothGrammars: a log with requests in the full and the compact
// grammar verifies, and the compact grammar's outcome is held to its own
// attestation.
func TestVerifyBothGrammars(t *testing.T) {
	l, _ := fixture(t, func(reqs []*testRequest) {
		for i, r := range reqs {
			r.compact = i%2 == 1 // request 1 (denied) and 3, 5 (allowed)
		}
	})
	rep := verify(t, l.full(), l.keys())
	if !rep.OK || rep.Requests != 6 || rep.Attestations != 6 {
		t.Fatalf("%s", reportJSON(rep))
	}
	cases := map[string]struct {
		edit func(r *testRequest)
		code string
		msg  string
	}{
		"an outcome that is not the attested one": {func(r *testRequest) {
			r.edit = map[string]func(string) string{typeCompleted: func(p string) string {
				return strings.Replace(p, `"state":"succeeded"`, `"state":"failed"`, 1)
			}}
		}, "subject_mismatch", "success"},
		"another output than the attested one": {func(r *testRequest) {
			r.edit = map[string]func(string) string{typeCompleted: func(p string) string {
				return strings.Replace(p, `"bytes":47`, `"bytes":48`, 1)
			}}
		}, "subject_mismatch", "output"},
		"an event after execution.completed": {func(r *testRequest) { r.trailing = []string{"request.cancelled"} },
			"reordered", "follows the attestation"},
		"a denial without its attestation": {func(r *testRequest) { r.deny, r.noAttestation = true, true },
			"missing_attestation", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, reqs := fixture(t, func(reqs []*testRequest) {
				reqs[3].compact = true
				tc.edit(reqs[3])
			})
			rep := verify(t, l.full(), l.keys())
			if rep.OK || rep.Fault == nil || rep.Fault.Code != tc.code || !strings.Contains(rep.Fault.Message, tc.msg) {
				t.Fatalf("request %s: %s, want %s (%q)", reqs[3].id, reportJSON(rep), tc.code, tc.msg)
			}
		})
	}
}
