package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

const testOrigin = "execledger.test/log"

// testLog is a Merkle log in memory, as the sealer keeps one: events
// appended in commit order, checkpoints signed by the log key and
// cosigned by a witness.
type testLog struct {
	t       testing.TB
	rnd     *rand.ChaCha8
	events  []Event
	streams map[string]int64
	clock   time.Time

	logSigner   note.Signer
	logVerifier note.Verifier
	logVKey     string
	witness     note.Signer
	witnessKey  note.Verifier
	witnessVKey string // a plain Ed25519 note key (0x01)
	signer      *attest.Signer
	checkpoints []Checkpoint // every checkpoint signed, ascending
	cosigned    map[uint64]bool
}

// newTestLog returns an empty log whose keys derive from seed.
func newTestLog(t testing.TB, seed byte) *testLog {
	t.Helper()
	l := &testLog{
		t:        t,
		rnd:      rand.NewChaCha8([32]byte{seed}),
		streams:  map[string]int64{},
		clock:    time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC),
		cosigned: map[uint64]bool{},
	}
	l.logSigner, l.logVerifier, l.logVKey = l.noteKey(testOrigin)
	wskey, wvkey := l.generateNoteKey("witness.test")
	l.witnessVKey = wvkey
	ws, err := fnote.NewSignerForCosignatureV1(wskey)
	if err != nil {
		t.Fatal(err)
	}
	l.witness, l.witnessKey = ws, ws.Verifier()
	var seed32 [32]byte
	l.rnd.Read(seed32[:])
	l.signer = attest.NewSigner(ed25519.NewKeyFromSeed(seed32[:]))
	return l
}

func (l *testLog) generateNoteKey(name string) (skey, vkey string) {
	l.t.Helper()
	skey, vkey, err := note.GenerateKey(l.rnd, name)
	if err != nil {
		l.t.Fatal(err)
	}
	return skey, vkey
}

func (l *testLog) noteKey(name string) (note.Signer, note.Verifier, string) {
	l.t.Helper()
	skey, vkey := l.generateNoteKey(name)
	s, err := note.NewSigner(skey)
	if err != nil {
		l.t.Fatal(err)
	}
	v, err := ledger.LoadNoteVerifier(vkey)
	if err != nil {
		l.t.Fatal(err)
	}
	return s, v, vkey
}

// keys are the keys a verifier of this log is given.
func (l *testLog) keys() Keys {
	return Keys{Log: l.logVerifier, Attestation: []ed25519.PublicKey{l.signer.PublicKey()}}
}

// append seals an event: the next version of stream, at the next leaf.
func (l *testLog) append(stream, typ, payload string) Event {
	l.streams[stream]++
	l.clock = l.clock.Add(time.Duration(137+l.rnd.Uint64()%5000) * time.Microsecond)
	meta := fmt.Sprintf(`{"actor": "executor-1", "correlation_id": %q}`, stream)
	e := ledger.Event{
		Position: int64(len(l.events) + 1), Stream: stream, Version: l.streams[stream], Type: typ,
		Payload: []byte(payload), Metadata: []byte(meta), RecordedAt: l.clock,
	}
	e.Hash = ledger.EventHash(e.Stream, e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt)
	rec := EventOf(uint64(len(l.events)), e, ledger.LeafHash(e.Encoding()))
	l.events = append(l.events, rec)
	return rec
}

// tree is the compact range of leaves [begin, end).
func (l *testLog) tree(begin, end uint64) *compact.Range {
	r := rangeFactory.NewEmptyRange(begin)
	for i := begin; i < end; i++ {
		if err := r.Append(l.events[i].LeafHash[:], nil); err != nil {
			l.t.Fatal(err)
		}
	}
	return r
}

func (l *testLog) root(size uint64) []byte {
	if size == 0 {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	root, err := l.tree(0, size).GetRootHash(nil)
	if err != nil {
		l.t.Fatal(err)
	}
	return root
}

// sign signs a checkpoint of the whole log, cosigned by the witness.
func (l *testLog) sign() Checkpoint {
	size := uint64(len(l.events))
	c := l.signCheckpoint(size, l.root(size), l.logSigner, l.witness)
	l.checkpoints = append(l.checkpoints, c)
	return c
}

// signCheckpoint signs a checkpoint body of size and root with signers.
func (l *testLog) signCheckpoint(size uint64, root []byte, signers ...note.Signer) Checkpoint {
	l.t.Helper()
	body := log.Checkpoint{Origin: testOrigin, Size: size, Hash: root}.Marshal()
	msg, err := note.Sign(&note.Note{Text: string(body)}, signers...)
	if err != nil {
		l.t.Fatal(err)
	}
	return Checkpoint{Size: size, Root: root, Note: string(msg)}
}

// rangeProof proves leaves [begin, end) against the tree of size size.
func (l *testLog) rangeProof(begin, end, size uint64) Range {
	return Range{Begin: begin, End: end, Size: size, Left: l.tree(0, begin).Hashes(), Right: l.tree(end, size).Hashes()}
}

// consistency proves the tree of size2 extends that of size1.
func (l *testLog) consistency(size1, size2 uint64) Consistency {
	nodes, err := proof.Consistency(size1, size2)
	if err != nil {
		l.t.Fatal(err)
	}
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		begin, end := id.Coverage()
		hashes[i] = l.tree(begin, end).Hashes()[0]
	}
	p, err := nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
	if err != nil {
		l.t.Fatal(err)
	}
	return Consistency{From: size1, To: size2, Hashes: p}
}

// bundleOf writes a bundle of the events at leaves (ascending; each run of
// consecutive leaves is one range), with the checkpoints cps (ascending; the
// last is the newest).
func (l *testLog) bundleOf(scope Scope, cps []Checkpoint, leaves []uint64) []byte {
	l.t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	newest := cps[len(cps)-1]
	must(l.t, w.Header(Header{
		Origin: testOrigin, CreatedAt: l.clock, Scope: scope,
		Keys: KeyIDs{Log: Fingerprint(l.logVerifier), Attestation: []string{l.signer.KeyID()}, Witnesses: []string{Fingerprint(l.witnessKey)}},
	}))
	for i, c := range cps {
		must(l.t, w.Checkpoint(c))
		if i > 0 {
			must(l.t, w.Consistency(l.consistency(cps[i-1].Size, c.Size)))
		}
	}
	for i := 0; i < len(leaves); {
		j := i + 1
		for j < len(leaves) && leaves[j] == leaves[j-1]+1 {
			j++
		}
		must(l.t, w.Range(l.rangeProof(leaves[i], leaves[j-1]+1, newest.Size)))
		for _, leaf := range leaves[i:j] {
			must(l.t, w.Event(l.events[leaf]))
		}
		i = j
	}
	must(l.t, w.End())
	return buf.Bytes()
}

// full writes a full bundle of the log with every checkpoint signed.
func (l *testLog) full() []byte {
	leaves := make([]uint64, l.checkpoints[len(l.checkpoints)-1].Size)
	for i := range leaves {
		leaves[i] = uint64(i)
	}
	return l.bundleOf(Scope{Full: true}, l.checkpoints, leaves)
}

// partial writes a bundle of one request: its stream's events, the
// checkpoints its attestation names and the newest.
func (l *testLog) partial(id string) []byte {
	newest := l.checkpoints[len(l.checkpoints)-1]
	var leaves []uint64
	var cps []Checkpoint
	for _, e := range l.events[:newest.Size] {
		if e.Stream != requestPrefix+id {
			continue
		}
		leaves = append(leaves, e.Leaf)
		if c := namedCheckpoint(l.t, e); c != nil && c.Size != newest.Size {
			for _, cp := range l.checkpoints {
				if cp.Size == c.Size {
					cps = append(cps, cp)
				}
			}
		}
	}
	return l.bundleOf(Scope{Request: id}, append(cps, newest), leaves)
}

// namedCheckpoint is the checkpoint an attestation.signed event names.
func namedCheckpoint(t testing.TB, e Event) *attest.LogCheckpoint {
	if e.Type != typeAttested {
		return nil
	}
	var p struct{ Envelope string }
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	var env attest.Envelope
	if err := json.Unmarshal([]byte(p.Envelope), &env); err != nil {
		t.Fatal(err)
	}
	var st attest.Statement
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	return st.Predicate.LogCheckpoint
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
