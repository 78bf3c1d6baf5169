package policy

import (
	"testing"
)

// TestDigestGolden pins the digest construction. The value was computed
// independently with Python's hashlib:
//
//	sha256(b"execledger.policyset.v1" + u64be(7) + b"a.cedar" + u64be(36) + text + u64be(7) + b"b.cedar" + u64be(0))
func TestDigestGolden(t *testing.T) {
	t.Parallel()
	e := mustSources(t, "a.cedar", "permit(principal, action, resource);", "b.cedar", "")
	const want = "sha256:31f82bbb4dfd4cc712e6e8201d7b71e2ec39e964044fbc354bb9e957bf72e866"
	if got := e.Digest(); got != want {
		t.Fatalf("Digest() = %s, want %s", got, want)
	}
}

func TestDigestStableAcrossLoads(t *testing.T) {
	t.Parallel()
	a, b := loadTestdata(t), loadTestdata(t)
	if a.Digest() != b.Digest() {
		t.Fatalf("digests differ across loads: %s vs %s", a.Digest(), b.Digest())
	}
	if d := a.Authorize(Request{Principal: "alice", Tool: "echo"}); d.PolicyDigest != a.Digest() {
		t.Fatalf("Decision.PolicyDigest = %s, want %s", d.PolicyDigest, a.Digest())
	}
}

func TestDigestChangesWithEveryByte(t *testing.T) {
	t.Parallel()
	const text = `@id("x") permit(principal, action, resource);`
	base := digestSources(sources("a.cedar", text, "b.cedar", "// b"))
	for i := range len(text) {
		changed := []byte(text)
		changed[i] ^= 0x01
		if got := digestSources([]Source{{Name: "a.cedar", Text: changed}, {Name: "b.cedar", Text: []byte("// b")}}); got == base {
			t.Fatalf("flipping byte %d did not change the digest", i)
		}
	}
}

func TestDigestDistinguishes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b []Source
	}{
		{name: "file order", a: sources("a.cedar", "// a", "b.cedar", "// b"), b: sources("b.cedar", "// b", "a.cedar", "// a")},
		{name: "file name", a: sources("a.cedar", "// a"), b: sources("c.cedar", "// a")},
		{name: "name/text boundary", a: sources("ab", "c"), b: sources("a", "bc")},
		{name: "file boundary", a: sources("a", "xy", "b", ""), b: sources("a", "x", "b", "y")},
		{name: "extra empty file", a: sources("a", "x"), b: sources("a", "x", "b", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if digestSources(tt.a) == digestSources(tt.b) {
				t.Fatalf("same digest for %q and %q", tt.a, tt.b)
			}
		})
	}
}
