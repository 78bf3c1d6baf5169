package bundle

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the example bundle and its keys in testdata/")

// The example bundle of docs/bundle.md and the keys that verify it.
const (
	exampleBundle    = "testdata/example.jsonl"
	exampleLogKey    = "testdata/log.pub"
	exampleAttestKey = "testdata/attestation.pub"
	exampleWitness   = "testdata/witness.pub"
)

// TestExampleBundle pins the format: the example bundle, written by an
// earlier version of this package, must still verify. With -update it is
// written again (the keys derive from a fixed seed; the cosignatures'
// timestamps change).
func TestExampleBundle(t *testing.T) {
	if *update {
		writeExample(t)
	}
	keys, err := LoadKeys(exampleLogKey, []string{exampleAttestKey}, []string{exampleWitness})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	rep := verify(t, b, keys)
	if !rep.OK || rep.Events != 10 || rep.Requests != 2 || rep.Attestations != 2 || rep.Checkpoints != 3 || rep.Witnesses != 1 {
		t.Fatalf("%s", reportJSON(rep))
	}
}

// TestExampleFaults checks what docs/bundle.md says of edits to the
// example.
func TestExampleFaults(t *testing.T) {
	keys, err := LoadKeys(exampleLogKey, []string{exampleAttestKey}, []string{exampleWitness})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	ls := splitLines(b)
	flipped := slices.Clone(ls)
	edit(t, flipped, lineOf(t, flipped, 0), func(e *Event) { e.Payload[len(e.Payload)-3] ^= 1 })
	wantFault(t, verify(t, joinLines(flipped), keys), HashMismatch, where{leaf: u(0), stream: "request:e2f6ce96-f7ee-4af3-b4d2-3b5b9d24e3c4", version: 1}, "")
	swapped := slices.Clone(ls)
	i := lineOf(t, swapped, 2)
	swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
	wantFault(t, verify(t, joinLines(swapped), keys), Reordered, where{leaf: u(2), stream: "request:e2f6ce96-f7ee-4af3-b4d2-3b5b9d24e3c4", version: 2}, "")
	dropped := slices.Delete(slices.Clone(ls), lineOf(t, ls, 9), lineOf(t, ls, 9)+1)
	wantFault(t, verify(t, joinLines(dropped), keys), MissingEvent, where{leaf: u(9)}, "")
}

// writeExample writes a full bundle of two requests, one allowed and one
// denied by policy, with a checkpoint every four events.
func writeExample(t *testing.T) {
	l := newTestLog(t, 42)
	allowed, denied := l.newRequest(), l.newRequest()
	denied.deny = true
	l.record([]*testRequest{allowed, denied}, 0, 4)
	pub, err := x509.MarshalPKIXPublicKey(l.signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		exampleBundle:    l.full(),
		exampleLogKey:    []byte(l.logVKey + "\n"),
		exampleWitness:   []byte(l.witnessVKey + "\n"),
		exampleAttestKey: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	} {
		must(t, os.MkdirAll(filepath.Dir(name), 0o755))
		must(t, os.WriteFile(name, b, 0o644))
	}
}

func ExampleVerify() {
	keys, err := LoadKeys("testdata/log.pub", []string{"testdata/attestation.pub"}, []string{"testdata/witness.pub"})
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := os.Open("testdata/example.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	rep, err := Verify(context.Background(), f, keys, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if !rep.OK {
		fmt.Println("not ok:", rep.Fault)
		return
	}
	fmt.Printf("ok: %d events, %d requests, %d attestations, checkpoint %d cosigned by %d witness\n",
		rep.Events, rep.Requests, rep.Attestations, rep.NewestSize, rep.Witnesses)
	// Output: ok: 10 events, 2 requests, 2 attestations, checkpoint 10 cosigned by 1 witness
}
