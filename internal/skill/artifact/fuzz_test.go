package artifact

import (
	"bytes"
	"testing"
)

// FuzzOpen: Open never panics, allocates no more than allocBudget, and
// accepts only an archive within the limits that is the canonical
// encoding of its files.
//
//	go test -fuzz FuzzOpen -fuzztime 60s ./internal/skill/artifact/
func FuzzOpen(f *testing.F) {
	f.Add(packedSkill(f))
	for _, tc := range smallHostile() {
		if len(tc.data) <= 8<<10 { // small seeds: the engine mutates and minimizes them fast
			f.Add(tc.data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a *Artifact
		var err error
		if n, limit := allocated(func() { a, err = Open(data) }), allocBudget(data); n > limit {
			t.Fatalf("%d bytes allocated for %d; the budget is %d", n, len(data), limit)
		}
		if err != nil {
			return
		}
		total := 0
		for p, b := range a.Files {
			if checkPath(p) != nil || len(b) > MaxEntry {
				t.Fatalf("accepted %q (%d bytes)", p, len(b))
			}
			total += len(b)
		}
		canon, err := encode(a.Files)
		if total > MaxTotal || len(a.Files) > MaxEntries || PayloadDigest(a.Files) != a.PayloadDigest || err != nil ||
			!bytes.Equal(canon, data) {
			t.Fatal("accepted an artifact over the limits, with a wrong digest, or not canonical")
		}
	})
}
