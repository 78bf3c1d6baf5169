package wasmrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
)

// Host holds the tier A tools of one Config: a Tool per registered
// module, and plugin.run when inline modules are allowed. Its tools share
// the instance cap. It is safe for concurrent use.
type Host struct {
	cfg   Config
	meter fuelMeter
	cache wazero.CompilationCache // shared by the tools' runtimes
	tools []*Tool
	slots chan struct{} // one per running instance

	waiting atomic.Int64 // calls waiting for a slot, for tests
	running atomic.Int64 // calls holding one
}

// New checks cfg, then reads, checks and compiles every registered
// module: a file whose digest is not the pinned one, or a module that
// does not compile, imports what tier A does not provide, starts beyond
// the limits or lacks its entrypoint, fails New, naming the tool.
func New(ctx context.Context, cfg Config) (*Host, error) {
	return newHost(ctx, cfg, newMeter())
}

func newHost(ctx context.Context, cfg Config, meter fuelMeter) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("wasmrun: %w", err)
	}
	h := &Host{cfg: cfg, meter: meter, slots: make(chan struct{}, cfg.MaxInstances)}
	if h.cache, err = compilationCache(cfg.CacheDir); err != nil {
		return nil, fmt.Errorf("wasmrun: %w", err)
	}
	for _, m := range cfg.Modules {
		t, err := h.register(ctx, m)
		if err != nil {
			h.Close(ctx)
			return nil, fmt.Errorf("wasmrun: %s: %w", m.ToolID, err)
		}
		h.tools = append(h.tools, t)
	}
	if cfg.AllowInline {
		r, err := newRunner(ctx, &h.cfg, meter, h.cache)
		if err != nil {
			h.Close(ctx)
			return nil, fmt.Errorf("wasmrun: %s: %w", PluginTool, err)
		}
		t := &Tool{h: h, name: PluginTool, run: r, fuel: cfg.FuelLimit, timeout: cfg.Timeout,
			cache: newModuleCache(cfg.InlineCacheSize), granted: grant(cfg.Policy, Capabilities{})}
		t.enf, t.mc, t.wasi = t.baseEnforcement(), baseConfig(t.name, nil), wasiSizesOf(t.name, nil)
		t.sealed = sealedConfig(t.mc)
		h.tools = append(h.tools, t)
	}
	return h, nil
}

// register loads a registered module into a runtime of its own.
func (h *Host) register(ctx context.Context, m Module) (*Tool, error) {
	fi, err := os.Stat(m.Path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > int64(h.cfg.MaxModuleBytes) {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", m.Path, h.cfg.MaxModuleBytes)
	}
	wasm, err := os.ReadFile(m.Path)
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(wasm)
	if hex.EncodeToString(got[:]) != m.SHA256 {
		return nil, fmt.Errorf("%s has sha256 %x, not the pinned %s", m.Path, got, m.SHA256)
	}
	return h.build(ctx, m, wasm)
}

// build compiles wasm, whose digest is m.SHA256, into m's tool, in a
// runtime of its own.
func (h *Host) build(ctx context.Context, m Module, wasm []byte) (*Tool, error) {
	r, err := newRunner(ctx, &h.cfg, h.meter, h.cache)
	if err != nil {
		return nil, err
	}
	t := &Tool{h: h, name: m.ToolID, run: r, mod: m, granted: grant(h.cfg.Policy, m.Capabilities),
		fuel: orDefault(m.FuelLimit, h.cfg.FuelLimit), timeout: orDefault(m.Timeout, h.cfg.Timeout)}
	if t.prog, err = r.compile(ctx, wasm, "sha256:"+m.SHA256, t.fuel); err == nil {
		t.entry, err = t.prog.entry(m.Entrypoint)
	}
	if err != nil {
		r.close(ctx)
		return nil, err
	}
	t.enf, t.mc, t.wasi = t.baseEnforcement(), baseConfig(t.name, m.Env), wasiSizesOf(t.name, m.Env)
	t.callEnf = t.callEnforcement(t.prog, t.entry)
	t.sealed = sealedConfig(t.mc)
	return t, nil
}

// CacheDir is the directory of compiled code the host was configured
// with (Config.CacheDir), "" when it keeps compiled code in memory.
func (h *Host) CacheDir() string { return h.cfg.CacheDir }

// Tools returns the tools, registered modules first in Config order, then
// plugin.run if allowed.
func (h *Host) Tools() []*Tool { return append([]*Tool(nil), h.tools...) }

// Tool returns the tool named name, or nil.
func (h *Host) Tool(name string) *Tool {
	for _, t := range h.tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

// Close closes the tools' runtimes and frees the compiled code. Calls
// should have ended first (serve closes tools after its executor
// stopped): a running metered call ends at its next yield or host call
// only when its context ends or its time runs out, not because its
// runtime closed.
func (h *Host) Close(ctx context.Context) error {
	var errs []error
	for _, t := range h.tools {
		errs = append(errs, t.run.close(ctx))
	}
	return errors.Join(append(errs, h.cache.Close(ctx))...)
}

// compilationCache is wazero's cache of compiled code: in memory, or in
// dir, which must be the daemon's alone since its contents are run.
func compilationCache(dir string) (wazero.CompilationCache, error) {
	if dir == "" {
		return wazero.NewCompilationCache(), nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("cache dir %s is not a directory only its owner may write (mode %v)", dir, fi.Mode())
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	return c, nil
}

// acquire takes an instance slot, waiting until ctx ends.
func (h *Host) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
	default:
		h.waiting.Add(1)
		select {
		case h.slots <- struct{}{}:
			h.waiting.Add(-1)
		case <-ctx.Done():
			h.waiting.Add(-1)
			return interrupted(ctx)
		}
	}
	h.running.Add(1)
	return nil
}

func (h *Host) release() {
	h.running.Add(-1)
	<-h.slots
}
