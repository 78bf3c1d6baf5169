package redact

import (
	"strings"
	"testing"
	"time"
)

// TestAdversarialInputIsLinear: inputs built to make scanners rescan cost
// time in proportion to their length. Each input is redacted at n and at
// 64n repetitions, alternately, and the cheapest run of each is compared:
// a linear scan costs about 64 times as much on the longer one (a few
// times more where the short input stays in the caches and the long one
// does not, and under the race detector), one that rescans thousands of
// times. What is measured is the CPU time of the thread that redacts
// (cpuTime), not the wall clock, so that the time a busy machine gives to
// other work does not count; and as caches, the collector and the
// scheduler can only make a run dearer, the rounds go on until the ratio
// of the cheapest runs is in bounds, failing only if it never is. How fast
// redaction is belongs to the benchmarks.
func TestAdversarialInputIsLinear(t *testing.T) {
	r := New(Options{})
	must(t, r.AddSecret("aaaa"))
	const minRounds, maxRounds, maxRatio = 3, 10, 1024.0 // 16 times the cost per byte
	for _, c := range []struct {
		name  string
		unit  string
		count int // repetitions of unit in the longer input
	}{
		{"nested schemes", "a://", 32 << 10},
		{"unclosed quotes", `password="x `, 8 << 10},
		{"separators", "token=", 16 << 10},
		{"repeated secret", "a", 128 << 10},
		{"unterminated PEMs", "-----BEGIN PRIVATE KEY-----\n", 4 << 10},
		{"path markers", "/token/", 16 << 10},
		{"bearers", "bearer ", 16 << 10},
	} {
		short, long := strings.Repeat(c.unit, c.count/64), strings.Repeat(c.unit, c.count)
		tShort, tLong := time.Duration(1<<62), time.Duration(1<<62)
		var ratio float64
		rounds := 0
		for rounds < maxRounds && (rounds < minRounds || ratio > maxRatio) {
			tShort = min(tShort, cpuTime(func() { r.String(short) }))
			tLong = min(tLong, cpuTime(func() { r.String(long) }))
			ratio = float64(tLong) / float64(max(tShort, time.Microsecond))
			rounds++
		}
		if ratio > maxRatio {
			t.Errorf("%s: %d bytes took %s, %d bytes %s (cheapest of %d runs): %.0f times as long for 64 times the input, want at most %.0f",
				c.name, len(long), tLong, len(short), tShort, rounds, ratio, maxRatio)
		} else {
			t.Logf("%s: 64 times the input, %.1f times the time (%s, %s; %d rounds)", c.name, ratio, tShort, tLong, rounds)
		}
	}
}
