package redact

import (
	"strings"
	"testing"
	"time"
)

// TestAdversarialInputIsLinear: inputs built to make scanners rescan.
func TestAdversarialInputIsLinear(t *testing.T) {
	r := New(Options{})
	must(t, r.AddSecret("aaaa"))
	for name, in := range map[string]string{
		"nested schemes":    strings.Repeat("a://", 64<<10),
		"unclosed quotes":   strings.Repeat(`password="x `, 16<<10),
		"separators":        strings.Repeat("token=", 32<<10),
		"repeated secret":   strings.Repeat("a", 256<<10),
		"unterminated PEMs": strings.Repeat("-----BEGIN PRIVATE KEY-----\n", 8<<10),
		"path markers":      strings.Repeat("/token/", 32<<10),
		"bearers":           strings.Repeat("bearer ", 32<<10),
	} {
		start := time.Now()
		r.String(in)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: %d bytes took %s", name, len(in), d)
		}
	}
}
