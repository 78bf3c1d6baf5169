package ledger

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"
)

func TestEncodingIsWhatEventHashHashes(t *testing.T) {
	at := time.Date(2026, 11, 25, 3, 4, 5, 123456000, time.UTC)
	e := Event{Stream: "request:x", Version: 3, Type: "tool.requested", Payload: []byte(`{"a": 1}`), Metadata: []byte(`{}`), RecordedAt: at}
	enc := e.Encoding()
	if got, want := EncodingHash(enc), EventHash(e.Stream, e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt); got != want {
		t.Fatalf("EncodingHash(Encoding) = %x, EventHash = %x", got, want)
	}
	if got, want := LeafHash(enc), sha256.Sum256(append([]byte{0}, enc...)); got != want {
		t.Fatalf("LeafHash = %x, want SHA-256(0x00 || encoding) %x", got, want)
	}
	// Every field is in the encoding: changing any one changes the leaf.
	variants := []Event{e, e, e, e, e, e}
	variants[0].Stream = "request:y"
	variants[1].Version = 4
	variants[2].Type = "tool.requestee"
	variants[3].Payload = []byte(`{"a":1}`)
	variants[4].Metadata = []byte(`{ }`)
	variants[5].RecordedAt = at.Add(time.Microsecond)
	for i, v := range variants {
		if LeafHash(v.Encoding()) == LeafHash(enc) {
			t.Errorf("variant %d has the same leaf hash", i)
		}
	}
}

func TestVerifierKeysLoadFromFilesAndText(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 { // base64 holds '+' in some keys and not in others
		path := fmt.Sprintf("%s/k%d", dir, i)
		vkey, err := GenerateNoteKey("test.execledger/log", path)
		if err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{path + ".pub", vkey} {
			v, err := LoadNoteVerifier(arg)
			if err != nil || v.Name() != "test.execledger/log" {
				t.Fatalf("LoadNoteVerifier(%q): %v", arg, err)
			}
		}
		wkey, err := GenerateWitnessKey("witness.test", path+"w")
		if err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{path + "w.pub", wkey} {
			if _, err := LoadWitnessVerifier(arg); err != nil {
				t.Fatalf("LoadWitnessVerifier(%q): %v", arg, err)
			}
		}
	}
}
