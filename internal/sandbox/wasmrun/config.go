package wasmrun

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/redact"
)

// Defaults of Config's and Module's zero fields; those that are
// configuration keys are the configuration's ([wasm], config.Default).
const (
	DefaultMemoryLimitPages = config.WasmMemoryLimitPages
	DefaultFuelLimit        = config.WasmFuelLimit
	DefaultMaxInstances     = config.WasmMaxInstances
	DefaultMaxModuleBytes   = config.WasmMaxModuleBytes
	DefaultTimeout          = config.WasmTimeout
	DefaultOutputLimit      = 64 << 10
	DefaultStderrLimit      = 8 << 10
	DefaultTableLimit       = 100_000 // elements, Palyra's
	DefaultInlineCacheSize  = 64
)

// Engines of Config.Engine.
const (
	EngineAuto        = "auto" // the compiler where wazero supports it, else the interpreter
	EngineCompiler    = "compiler"
	EngineInterpreter = "interpreter"
)

// PluginTool is the name of the inline-module tool (Config.AllowInline).
const PluginTool = "plugin.run"

// Config configures a Host: the registered skill modules, the inline
// plugin.run tool, and the limits they run under.
type Config struct {
	// Modules are the registered skills, one tool each.
	Modules []Module
	// AllowInline registers plugin.run, which runs a module sent in the
	// call's input. Off by default: the tool then does not exist.
	AllowInline bool
	// Engine is EngineAuto (""), EngineCompiler or EngineInterpreter.
	Engine string
	// MemoryLimitPages caps each instance's linear memory, in 64 KiB
	// pages; 0 means DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// FuelLimit is each call's fuel; 0 means DefaultFuelLimit. Module
	// may override it.
	FuelLimit int64
	// MaxInstances bounds the instances running at once over all the
	// host's tools; a call that finds none free waits for one until its
	// context ends. 0 means DefaultMaxInstances.
	MaxInstances int
	// MaxModuleBytes bounds a module's size; 0 means
	// DefaultMaxModuleBytes.
	MaxModuleBytes int
	// Timeout is each call's wall-clock limit, a backstop to fuel; 0 means
	// DefaultTimeout. Module may override it.
	Timeout time.Duration
	// OutputLimit bounds what a WASI command writes to stdout, in bytes;
	// more is quota_exceeded. 0 means DefaultOutputLimit.
	OutputLimit int
	// StderrLimit bounds the stderr kept for a failed call's result; the
	// rest is dropped. 0 means DefaultStderrLimit.
	StderrLimit int
	// TableLimit bounds each table's elements, also what table.grow may
	// reach; 0 means DefaultTableLimit.
	TableLimit uint32
	// InlineCacheSize bounds plugin.run's cache of compiled modules
	// (least recently used first out); 0 means DefaultInlineCacheSize.
	InlineCacheSize int
	// Redactor redacts output and stderr; nil means redact.New with
	// defaults.
	Redactor *redact.Redactor
	// CacheDir, when set, is where wazero keeps the machine code it
	// compiles, so that a restart does not compile the registered modules
	// again. The host runs that code: the directory must be the daemon's
	// alone (New creates it 0700 and refuses one that others may write).
	// Without it compiled code is shared in memory by the host's tools.
	// Inspect given a CacheDir compiles into it too.
	CacheDir string
	// Policy is what the registered modules may be granted: a call gets
	// what both Policy and its module's Capabilities list. plugin.run's
	// modules are granted nothing.
	Policy Capabilities
	// Secrets provides the values of granted secrets; nil means none can
	// be read.
	Secrets SecretProvider
	// Storage is the key-value store of granted storage prefixes; nil
	// means none can be used.
	Storage Storage
	// HTTP configures http_request (ports, private ranges, resolver,
	// timeout, size caps); the zero value means its defaults.
	HTTP HTTPOptions

	// hostModules, for tests, instantiates host modules besides WASI in
	// each runtime and returns their names, whose functions modules may
	// then import.
	hostModules hostModulesFunc
}

// Module is a registered skill module.
type Module struct {
	// ToolID is the tool's name, e.g. "acme.hello".
	ToolID string
	// Path is the module file.
	Path string
	// SHA256 is the file's pinned digest, in hex; New refuses a file
	// whose digest differs.
	SHA256 string
	// Entrypoint is the exported function a call runs; "" means "_start"
	// when the module exports it (a WASI command), else "run".
	Entrypoint string
	// Env is the WASI environment (from the skill's manifest); none by
	// default.
	Env map[string]string
	// FuelLimit, Timeout and MemoryLimitPages override Config's when not
	// zero (an installed skill's quotas, already within Config's).
	FuelLimit        int64
	Timeout          time.Duration
	MemoryLimitPages uint32
	// Capabilities are what the skill's manifest asks for; calls are
	// granted those Config.Policy allows too.
	Capabilities Capabilities
}

// toolID is a dotted lower-case tool name such as acme.hello.
var toolID = regexp.MustCompile(`^[a-z0-9][a-z0-9_\-]*(\.[a-z0-9][a-z0-9_\-]*)+$`)

// withDefaults fills cfg's zero fields and checks it.
func (cfg Config) withDefaults() (Config, error) {
	switch cfg.Engine {
	case "":
		cfg.Engine = EngineAuto
	case EngineAuto, EngineCompiler, EngineInterpreter:
	default:
		return cfg, fmt.Errorf("engine %q is not auto, compiler or interpreter", cfg.Engine)
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.MemoryLimitPages > maxPages {
		return cfg, fmt.Errorf("memory limit of %d pages is above WebAssembly's %d", cfg.MemoryLimitPages, maxPages)
	}
	cfg.FuelLimit = orDefault(cfg.FuelLimit, DefaultFuelLimit)
	cfg.MaxInstances = orDefault(cfg.MaxInstances, DefaultMaxInstances)
	cfg.MaxModuleBytes = orDefault(cfg.MaxModuleBytes, DefaultMaxModuleBytes)
	cfg.Timeout = orDefault(cfg.Timeout, DefaultTimeout)
	cfg.OutputLimit = orDefault(cfg.OutputLimit, DefaultOutputLimit)
	cfg.StderrLimit = orDefault(cfg.StderrLimit, DefaultStderrLimit)
	cfg.TableLimit = orDefault(cfg.TableLimit, DefaultTableLimit)
	cfg.InlineCacheSize = orDefault(cfg.InlineCacheSize, DefaultInlineCacheSize)
	if cfg.Redactor == nil {
		cfg.Redactor = redact.New(redact.Options{})
	}
	if err := cfg.Policy.check(); err != nil {
		return cfg, fmt.Errorf("policy: %w", err)
	}
	seen := map[string]bool{PluginTool: cfg.AllowInline}
	for i, m := range cfg.Modules {
		if err := m.check(seen); err != nil {
			return cfg, fmt.Errorf("module %d: %w", i, err)
		}
		seen[m.ToolID] = true
	}
	return cfg, nil
}

func (m Module) check(seen map[string]bool) error {
	if !toolID.MatchString(m.ToolID) {
		return fmt.Errorf("tool id %q is not a dotted lower-case name such as acme.hello", m.ToolID)
	}
	if seen[m.ToolID] {
		return fmt.Errorf("tool id %q is registered twice", m.ToolID)
	}
	if !filepath.IsAbs(m.Path) {
		return fmt.Errorf("%s: path %q is not absolute", m.ToolID, m.Path)
	}
	if d, err := hex.DecodeString(m.SHA256); err != nil || len(d) != 32 || m.SHA256 != strings.ToLower(m.SHA256) {
		return fmt.Errorf("%s: sha256 %q is not 64 lower-case hex digits", m.ToolID, m.SHA256)
	}
	for k := range m.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%s: environment variable name %q", m.ToolID, k)
		}
	}
	if m.FuelLimit < 0 || m.Timeout < 0 {
		return fmt.Errorf("%s: negative fuel limit or timeout", m.ToolID)
	}
	if err := m.Capabilities.check(); err != nil {
		return fmt.Errorf("%s: %w", m.ToolID, err)
	}
	return nil
}

func orDefault[T int | int64 | uint32 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
