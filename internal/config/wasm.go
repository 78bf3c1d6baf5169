package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/execledger/execledger/internal/egress"
)

// Wasm configures tier A: WebAssembly skill modules run by wazero.
//
// Modules is a list of tables ([[wasm.modules]]), which one environment
// variable cannot express: modules are set in the file only, and
// EXECLEDGER_WASM_MODULES is an error. A module's relative path is
// resolved against the directory of the file that names it.
//
// Capabilities: a call may use what both the policy (the Policy* lists)
// and its module's registration (WasmModule.Capabilities) name. Secret
// values come from one provider: files in SecretsDir, or the daemon's
// environment variables SecretsEnvPrefix+NAME; with neither set no secret
// can be read. Storage is ledger.skill_storage.
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

	PolicyHTTPHosts       []string `toml:"policy_http_hosts"`       // hosts modules may be granted
	PolicySecrets         []string `toml:"policy_secrets"`          // secret names modules may be granted
	PolicyStoragePrefixes []string `toml:"policy_storage_prefixes"` // storage key prefixes modules may be granted
	PolicyChannels        []string `toml:"policy_channels"`         // channels modules may be granted
	SecretsDir            string   `toml:"secrets_dir"`             // secret NAME is the file <dir>/NAME; "" = none
	SecretsEnvPrefix      string   `toml:"secrets_env_prefix"`      // secret NAME is the variable <prefix>NAME; "" = none
	HTTPPorts             []int    `toml:"http_ports"`              // ports http_request may reach
	HTTPPrivateRanges     []string `toml:"http_private_ranges"`     // CIDRs of private/loopback addresses a granted host may be
}

// WasmCapabilities are what a module asks for: [wasm.modules.capabilities].
type WasmCapabilities struct {
	HTTPHosts       []string `toml:"http_hosts"`
	Secrets         []string `toml:"secrets"`
	StoragePrefixes []string `toml:"storage_prefixes"`
	Channels        []string `toml:"channels"`
}

// WasmModule is a registered skill module: [[wasm.modules]].
type WasmModule struct {
	Tool       string   `toml:"tool"`       // the tool id, e.g. acme.hello
	Path       string   `toml:"path"`       // the .wasm file; relative to the configuration file's directory
	SHA256     string   `toml:"sha256"`     // the file's pinned digest, 64 hex digits
	Entrypoint string   `toml:"entrypoint"` // "" = _start if exported (WASI command), else run
	FuelLimit  int      `toml:"fuel_limit"` // 0 = wasm.fuel_limit
	Timeout    Duration `toml:"timeout"`    // 0 = wasm.timeout

	Capabilities WasmCapabilities `toml:"capabilities"` // granted where the policy allows them too
}

// maxWasmPages is WebAssembly's limit on a 32-bit memory (4 GiB).
const maxWasmPages = 65536

// wasmToolID is a dotted lower-case tool id such as acme.hello.
var wasmToolID = regexp.MustCompile(`^[a-z0-9][a-z0-9_\-]*(\.[a-z0-9][a-z0-9_\-]*)+$`)

// The [wasm] defaults, which tier A's runner (wasmrun) also takes for a
// zero field: one set of numbers.
const (
	WasmMemoryLimitPages = 1024 // 64 MiB, Palyra's
	WasmFuelLimit        = 10_000_000
	WasmMaxInstances     = 256
	WasmMaxModuleBytes   = 8 << 20
	WasmTimeout          = 30 * time.Second // Palyra's wall_clock_timeout_ms
)

func defaultWasm() Wasm {
	return Wasm{Engine: "auto", MemoryLimitPages: WasmMemoryLimitPages, FuelLimit: WasmFuelLimit, MaxInstances: WasmMaxInstances,
		MaxModuleBytes: WasmMaxModuleBytes, Timeout: Duration{WasmTimeout}, Modules: []WasmModule{},
		PolicyHTTPHosts: []string{}, PolicySecrets: []string{}, PolicyStoragePrefixes: []string{}, PolicyChannels: []string{},
		HTTPPorts: slices.Clone(egress.DefaultPorts), HTTPPrivateRanges: []string{}}
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
	errs = append(errs, w.validateCapabilities()...)
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
	errs = append(errs, m.Capabilities.validate(m.Tool+": capabilities.")...)
	return errors.Join(errs...)
}

// Limits of capability names, as wasmrun's.
const (
	maxCapabilityName  = 256 // bytes
	maxCapabilityNames = 10_000
)

// secretName is a name both secret providers accept, and envPrefix a
// prefix of variable names.
var (
	secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envPrefix  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// validateCapabilities checks the policy lists and the secrets provider.
func (w Wasm) validateCapabilities() []error {
	errs := WasmCapabilities{HTTPHosts: w.PolicyHTTPHosts, Secrets: w.PolicySecrets,
		StoragePrefixes: w.PolicyStoragePrefixes, Channels: w.PolicyChannels}.validate("wasm.policy_")
	switch {
	case w.SecretsDir != "" && w.SecretsEnvPrefix != "":
		errs = append(errs, errors.New("wasm.secrets_dir and wasm.secrets_env_prefix: set one secrets provider, not both"))
	case w.SecretsEnvPrefix != "" && !envPrefix.MatchString(w.SecretsEnvPrefix):
		errs = append(errs, fmt.Errorf("wasm.secrets_env_prefix: %q is not letters, digits and '_', not starting with a digit", w.SecretsEnvPrefix))
	case w.SecretsEnvPrefix != "" && (strings.HasPrefix(EnvPrefix, w.SecretsEnvPrefix) || strings.HasPrefix(w.SecretsEnvPrefix, EnvPrefix)):
		errs = append(errs, fmt.Errorf("wasm.secrets_env_prefix: %q overlaps %s, the configuration variables' prefix", w.SecretsEnvPrefix, EnvPrefix))
	case len(w.PolicySecrets) > 0 && w.SecretsDir == "" && w.SecretsEnvPrefix == "":
		errs = append(errs, errors.New("wasm.policy_secrets: secrets are allowed but no provider is set: set wasm.secrets_dir or wasm.secrets_env_prefix"))
	}
	if len(w.HTTPPorts) == 0 {
		errs = append(errs, errors.New("wasm.http_ports: must not be empty"))
	}
	for _, p := range w.HTTPPorts {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("wasm.http_ports: %d is not a port", p))
		}
	}
	for _, r := range w.HTTPPrivateRanges {
		if pr, err := netip.ParsePrefix(r); err != nil || pr.Bits() == 0 {
			errs = append(errs, fmt.Errorf("wasm.http_private_ranges: %q is not a CIDR range narrower than /0", r))
		}
	}
	return errs
}

// validate checks each list of c, whose keys are named prefix+key.
func (c WasmCapabilities) validate(prefix string) []error {
	var errs []error
	for _, l := range []struct {
		key   string
		names []string
	}{{"http_hosts", c.HTTPHosts}, {"secrets", c.Secrets}, {"storage_prefixes", c.StoragePrefixes}, {"channels", c.Channels}} {
		if err := validateNames(l.key, l.names); err != nil {
			errs = append(errs, fmt.Errorf("%s%w", prefix, err))
		}
	}
	return errs
}

func validateNames(key string, names []string) error {
	if len(names) > maxCapabilityNames {
		return fmt.Errorf("%s: %d names; at most %d", key, len(names), maxCapabilityNames)
	}
	for i, n := range names {
		switch {
		case n == "" || len(n) > maxCapabilityName:
			return fmt.Errorf("%s: %q is empty or longer than %d bytes", key, n, maxCapabilityName)
		case strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return fmt.Errorf("%s: %q has a control character", key, n)
		case slices.Contains(names[:i], n):
			return fmt.Errorf("%s: %q is listed twice", key, n)
		case key == "secrets" && !secretName.MatchString(n):
			return fmt.Errorf("%s: %q is not letters, digits and '_', not starting with a digit", key, n)
		}
	}
	return nil
}
