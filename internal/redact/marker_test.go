package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSecretsNeverSurviveSmallAlphabet draws inputs and secrets from the
// marker's own letters, where replacements most often spell secrets anew.
func TestSecretsNeverSurviveSmallAlphabet(t *testing.T) {
	const alphabet = "<redacted>ab=:/@ \n"
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	accepted := 0
	for range 20000 {
		r := New(Options{})
		var secrets []string
		for range 3 {
			if s := word(4 + rng.IntN(8)); r.AddSecret(s) == nil {
				secrets = append(secrets, s)
			}
		}
		if len(secrets) == 0 {
			continue
		}
		accepted++
		in := word(rng.IntN(60))
		for _, s := range secrets {
			if rng.IntN(2) == 0 {
				in += s + word(rng.IntN(4))
			}
		}
		out := r.String(in)
		streamed := writeChunks(t, r, in, 1+rng.IntN(5))
		for _, s := range secrets {
			if strings.Contains(out, s) || strings.Contains(streamed, s) {
				t.Fatalf("secrets %q, input %q:\nBytes  %q\nWriter %q\nholds %q", secrets, in, out, streamed, s)
			}
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d cases had an accepted secret", accepted)
	}
}
