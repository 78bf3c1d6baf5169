package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

func TestLoadKeys(t *testing.T) {
	l := newTestLog(t, 5)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	cosigV1, err := fnote.VKeyToCosignatureV1(l.witnessVKey)
	if err != nil {
		t.Fatal(err)
	}
	logKey := write("log.pub", l.logVKey+"\n")
	if _, err := attest.GenerateKeyFiles(filepath.Join(dir, "attest"), filepath.Join(dir, "attest.pub")); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(logKey, []string{filepath.Join(dir, "attest.pub")},
		[]string{write("w1.pub", "  "+cosigV1+"\n")})
	if err != nil {
		t.Fatal(err)
	}
	if keys.Log.Name() != testOrigin || len(keys.Attestation) != 1 || len(keys.Witnesses) != 1 {
		t.Fatalf("%+v", keys)
	}
	// A plain Ed25519 witness key and its cosignature/v1 form name the
	// key the witness cosigns with.
	for _, vkey := range []string{l.witnessVKey, cosigV1} {
		w, err := ledger.LoadWitnessVerifier(vkey)
		if err != nil {
			t.Fatal(err)
		}
		if Fingerprint(w) != Fingerprint(l.witnessKey) {
			t.Fatalf("%s reads as %s, the witness signs as %s", vkey, Fingerprint(w), Fingerprint(l.witnessKey))
		}
	}

	for name, files := range map[string][3][]string{
		"no log key file":          {{filepath.Join(dir, "absent")}, nil, nil},
		"a log key that is not":    {{write("bad.pub", "not a key")}, nil, nil},
		"two lines":                {{write("two.pub", l.logVKey+"\n"+l.logVKey+"\n")}, nil, nil},
		"a PEM attestation key":    {{logKey}, {logKey}, nil},
		"a witness that is no key": {{logKey}, nil, {write("w.pub", "witness")}},
		"a witness given twice":    {{logKey}, nil, {write("w3.pub", l.witnessVKey), write("w4.pub", cosigV1)}},
	} {
		if _, err := LoadKeys(files[0][0], files[1], files[2]); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	if err := w.Event(Event{}); err == nil {
		t.Fatal("an event before the header")
	}
	must(t, w.Header(Header{Format: "other", Version: 9, Origin: testOrigin}))
	if err := w.Header(Header{}); err == nil {
		t.Fatal("a second header")
	}
	if err := w.Event(Event{Stream: "s", Type: "t", Version: 1, Payload: []byte("{\"a\":\"\xff\"}"), Metadata: []byte("{}")}); err == nil {
		t.Fatal("an event that is not UTF-8")
	}
	must(t, w.Event(Event{Stream: "s", Type: "t", Version: 1, Payload: []byte(`{"a": "<&>\u2028"}`), Metadata: []byte("{}")}))
	must(t, w.End())
	if err := w.End(); err == nil {
		t.Fatal("a record after the end")
	}
	ls := splitLines([]byte(b.String()))
	if !strings.HasPrefix(ls[0], `{"kind":"header","format":"execledger-bundle","version":1,`) || ls[2] != `{"kind":"end","events":1,"checkpoints":0}` {
		t.Fatalf("%q", ls)
	}
	r, err := ParseRecord([]byte(ls[1]))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.(*Event).Payload); got != `{"a": "<&>\u2028"}` {
		t.Fatalf("payload %q does not round-trip", got)
	}
}
