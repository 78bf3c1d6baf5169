package wasmrun

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// clockEpoch is where every call's wall clock starts:
// 2024-01-01T00:00:00Z.
const clockEpoch = 1704067200

// clockTick is how far a call's clock moves at each reading, as wazero's
// own fake clock does.
const clockTick = 1_000_000 // 1 ms

// clock is a call's deterministic clock. Both its wall clock (from
// clockEpoch) and its monotonic clock (from 0) move clockTick at each
// reading and by the requested time at each sleep, which returns at once:
// what a skill sees of time depends only on what it did, never on the
// host, so a call can be replayed. Readings never repeat, so Go's runtime
// and time.Sleep make progress.
type clock struct{ ns atomic.Int64 }

func (c *clock) walltime() (int64, int32) {
	n := c.ns.Add(clockTick)
	return clockEpoch + n/1e9, int32(n % 1e9)
}

func (c *clock) nanotime() int64 { return c.ns.Add(clockTick) }

func (c *clock) nanosleep(ns int64) {
	if ns > 0 {
		c.ns.Add(ns)
	}
}

// randSeed derives a call's random seed from the digests of its module
// and its input: the same module given the same input sees the same
// "random" bytes, so a call can be replayed. It is not a secret; a skill
// that needs unpredictable bytes needs a capability that does not exist
// yet (and would make it unsafe to repeat).
func randSeed(moduleDigest string, input []byte) [32]byte {
	in := sha256.Sum256(input)
	h := sha256.New()
	h.Write([]byte("execledger/wasmrun random v1\x00"))
	h.Write([]byte(moduleDigest))
	h.Write([]byte{0})
	h.Write(in[:])
	var seed [32]byte
	h.Sum(seed[:0])
	return seed
}

// stdio is a call's standard streams.
type stdio struct {
	stdin  io.Reader
	stdout *limitedBuffer
	stderr *limitedBuffer
}

// baseConfig is the WASI configuration every call of a tool shares: no
// preopened directories (so no file system), no sockets (so no network),
// the environment the module was registered with, args [tool id].
// Instances are anonymous, so any number of one module run at once, and
// start no function: the entrypoint is called after instantiation.
func baseConfig(toolID string, env map[string]string) wazero.ModuleConfig {
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithArgs(toolID).
		WithOsyield(func() {})
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		mc = mc.WithEnv(k, env[k])
	}
	return mc
}

// sealedConfig is base for a module that imports no WASI, which can read
// neither streams, clocks nor randomness: they are set once, fixed and
// empty, instead of per call (wazero's defaults would read the host's).
func sealedConfig(base wazero.ModuleConfig) wazero.ModuleConfig {
	c := &clock{}
	return base.
		WithWalltime(c.walltime, sys.ClockResolution(clockTick)).
		WithNanotime(c.nanotime, sys.ClockResolution(clockTick)).
		WithNanosleep(c.nanosleep).
		WithRandSource(bytes.NewReader(nil))
}

// callConfig adds a call's own to base: its streams, its deterministic
// clock, and its random source, seeded from the module's and the input's
// digests.
func callConfig(base wazero.ModuleConfig, digest string, input []byte, std stdio) wazero.ModuleConfig {
	c := &clock{}
	return base.
		WithStdin(std.stdin).
		WithStdout(std.stdout).
		WithStderr(std.stderr).
		WithWalltime(c.walltime, sys.ClockResolution(clockTick)).
		WithNanotime(c.nanotime, sys.ClockResolution(clockTick)).
		WithNanosleep(c.nanosleep).
		WithRandSource(rand.NewChaCha8(randSeed(digest, input)))
}

// limitedBuffer keeps the first limit bytes written to it and counts the
// rest. Writes never fail, so a module that writes too much is not
// interrupted, only recorded.
type limitedBuffer struct {
	limit int
	buf   bytes.Buffer
	total int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.total += int64(len(p))
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Truncated reports whether bytes were dropped.
func (b *limitedBuffer) Truncated() bool { return b.total > int64(b.buf.Len()) }
