package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Wasm configures tier A: WebAssembly skill modules run by wazero.
//
// Modules is a list of tables ([[wasm.modules]]), which one environment
// variable cannot express: modules are set in the file only, and
// EXECLEDGER_WASM_MODULES is an error. A module's relative path is
// resolved against the directory of the file that names it.
type Wasm struct {
	Enabled          bool         `toml:"enabled"`            // false: serve registers no tier A tool
	Engine           string       `toml:"engine"`             // auto, compiler or interpreter
	MemoryLimitPages int          `toml:"memory_limit_pages"` // per instance, 64 KiB pages
	FuelLimit        int          `toml:"fuel_limit"`         // per call, unless the module sets its own
	MaxInstances     int          `toml:"max_instances"`      // running at once over all tier A tools
	MaxModuleBytes   int          `toml:"max_module_bytes"`   // a module file's size limit
	Timeout          Duration     `toml:"timeout"`            // per call, a backstop to fuel, unless the module sets its own
	CacheDir         string       `toml:"cache_dir"`          // compiled code kept between restarts; "" = in memory only
	AllowInline      bool         `toml:"allow_inline"`       // the plugin.run tool, which runs a module sent in the input
	Modules          []WasmModule `toml:"modules"`            // registered skills, one tool each; file only
}

// WasmModule is a registered skill module: [[wasm.modules]].
type WasmModule struct {
	Tool       string   `toml:"tool"`       // the tool id, e.g. acme.hello
	Path       string   `toml:"path"`       // the .wasm file; relative to the configuration file's directory
	SHA256     string   `toml:"sha256"`     // the file's pinned digest, 64 hex digits
	Entrypoint string   `toml:"entrypoint"` // "" = _start if exported (WASI command), else run
	FuelLimit  int      `toml:"fuel_limit"` // 0 = wasm.fuel_limit
	Timeout    Duration `toml:"timeout"`    // 0 = wasm.timeout
}

// maxWasmPages is WebAssembly's limit on a 32-bit memory (4 GiB).
const maxWasmPages = 65536

// wasmToolID is a dotted lower-case tool id such as acme.hello.
var wasmToolID = regexp.MustCompile(`^[a-z0-9][a-z0-9_\-]*(\.[a-z0-9][a-z0-9_\-]*)+$`)

func defaultWasm() Wasm {
	return Wasm{Engine: "auto", MemoryLimitPages: 1024, FuelLimit: 10_000_000, MaxInstances: 256,
		MaxModuleBytes: 8 << 20, Timeout: Duration{30 * time.Second}, Modules: []WasmModule{}}
}

// normalize makes the modules' relative paths relative to dir, the
// configuration file's directory, and their digests lower case.
func (w *Wasm) normalize(dir string) {
	for i, m := range w.Modules {
		if m.Path != "" && !filepath.IsAbs(m.Path) {
			w.Modules[i].Path = filepath.Join(dir, m.Path)
		}
		w.Modules[i].SHA256 = strings.ToLower(m.SHA256)
	}
}

// validate checks [wasm] and every [[wasm.modules]].
func (w Wasm) validate() []error {
	var errs []error
	if w.Engine != "auto" && w.Engine != "compiler" && w.Engine != "interpreter" {
		errs = append(errs, fmt.Errorf("wasm.engine: %q is not auto, compiler or interpreter", w.Engine))
	}
	if w.MemoryLimitPages < 1 || w.MemoryLimitPages > maxWasmPages {
		errs = append(errs, fmt.Errorf("wasm.memory_limit_pages: %d is not between 1 and %d", w.MemoryLimitPages, maxWasmPages))
	}
	if w.FuelLimit < 1 || w.MaxInstances < 1 || w.MaxModuleBytes < 1 || w.Timeout.Duration <= 0 {
		errs = append(errs, errors.New("wasm: fuel_limit, max_instances, max_module_bytes and timeout must be positive"))
	}
	seen := map[string]bool{"plugin.run": w.AllowInline}
	for i, m := range w.Modules {
		if err := m.validate(seen); err != nil {
			errs = append(errs, fmt.Errorf("wasm.modules[%d]: %w", i, err))
		}
		seen[m.Tool] = true
	}
	return errs
}

func (m WasmModule) validate(seen map[string]bool) error {
	var errs []error
	if !wasmToolID.MatchString(m.Tool) {
		errs = append(errs, fmt.Errorf("tool: %q is not a dotted lower-case identifier such as acme.hello", m.Tool))
	} else if seen[m.Tool] {
		errs = append(errs, fmt.Errorf("tool: %q is registered twice", m.Tool))
	}
	if m.Path == "" {
		errs = append(errs, fmt.Errorf("%s: path: must not be empty", m.Tool))
	}
	if d, err := hex.DecodeString(m.SHA256); err != nil || len(d) != 32 {
		errs = append(errs, fmt.Errorf("%s: sha256: %q is not 64 hex digits", m.Tool, m.SHA256))
	}
	if m.FuelLimit < 0 || m.Timeout.Duration < 0 {
		errs = append(errs, fmt.Errorf("%s: fuel_limit and timeout: must be positive, or 0 for [wasm]'s", m.Tool))
	}
	return errors.Join(errs...)
}
