// Package audit decides whether a skill's modules and requested
// capabilities are fit to run before anyone enables it; a failing audit
// puts the skill in quarantine, from which only two approvals release it.
//
// Every check is recorded, passed or failed, in a stable order (module
// presence; then each module, by path; then the capabilities), and every
// failure is listed, not only the first. Checks and their targets:
//
//   - module_present (module path): each tool's module is in the
//     artifact, and each module serves a tool (nothing in an artifact goes
//     unexplained);
//   - module_size (module path): at most Input.MaxModuleBytes, and at most
//     what tier A's configuration registers;
//   - module_valid (module path): wazero validates the module, its
//     memories and tables start within tier A's limits, and the
//     instrumented module compiles (wasmrun.Inspect, in the words a
//     failing registration uses);
//   - module_instrumentable (module path): the fuel meter instruments it;
//   - imports_known (module path): it imports only what tier A's host
//     modules provide (WASI preview1 but its socket functions, the
//     capability modules). A WASI socket import (sock_accept, sock_recv,
//     sock_send, sock_shutdown) fails it whatever the skill requests: no
//     capability grants raw sockets, and tier A would refuse to build it
//     even after two approvals;
//   - exports_limit (module path): at most Input.MaxExports exports of
//     every kind;
//   - entrypoint_exported (module path): each tool's export (or the
//     default, _start if exported, else run) is a function of an
//     entrypoint's type;
//   - wasi_filesystem_imports (module path): no WASI function that names
//     paths (path_*, fd_readdir) unless the skill declares filesystem
//     capabilities — which tier A does not support (no preopened
//     directories), so such a module fails. Go's wasip1 port links
//     path_open into a program that opens files (os.Open, os.ReadFile,
//     ...), not into one that only uses stdin, stdout and the
//     environment: a Go skill that touches files is quarantined by design
//     and needs the two-person approval; WAT, Rust without std::fs and Go
//     without os file calls pass;
//   - filesystem_capabilities ("filesystem"): no filesystem roots;
//   - wildcards (capability class): a wildcard ("*", or a host "*.x" or
//     ".x") needs both the manifest's wildcard_opt_in and the
//     configuration's [skills] allow_wildcards;
//   - capabilities_within_max (capability class): every requested host,
//     secret, storage prefix and channel is within Max.
//
// Checks of one module stop where wasmrun.Inspect stops: a module wazero
// refuses has only module_size and module_valid, and a check whose step
// Inspect did not reach (imports_known after a failed instrumentation,
// say) is not recorded — the module has failed already.
//
// Within Max is the most a skill may ask for, not what a call is
// granted: wasmrun grants the exact intersection of the manifest's and
// the policy's lists, so a storage prefix that extends a policy prefix,
// or a host only a policy wildcard covers, passes the audit and is not
// granted until the policy lists it.
package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/execledger/execledger/internal/sandbox/wasmrun"
)

// Capabilities are what a skill's manifest requests.
type Capabilities struct {
	HTTPHosts, Secrets, StoragePrefixes, Channels []string
	FilesystemReadRoots, FilesystemWriteRoots     []string
	WildcardOptIn                                 bool
}

// Max is the most the configuration lets a skill request: the operator's
// policy lists ([wasm] policy_http_hosts, policy_secrets,
// policy_storage_prefixes, policy_channels).
type Max struct {
	HTTPHosts, Secrets, StoragePrefixes, Channels []string
	// AllowWildcards ([skills] allow_wildcards) false: a wildcard
	// request fails even with the manifest's wildcard_opt_in, and a
	// policy host "*.example.com" covers only itself.
	AllowWildcards bool
}

// Entrypoint is a tool's module and export ("" for the runtime's
// default).
type Entrypoint struct{ Tool, Module, Export string }

// Input is what an audit looks at.
type Input struct {
	Modules        map[string][]byte // the artifact's modules by path (modules/x.wasm)
	Entrypoints    []Entrypoint      // every tool's module and export
	Capabilities   Capabilities
	Max            Max
	Wasm           wasmrun.Config // the host's tier A engine and limits; zero = defaults
	MaxModuleBytes int            // 0 = DefaultMaxModuleBytes
	MaxExports     int            // 0 = DefaultMaxExports
}

// Defaults of Input.
const (
	DefaultMaxModuleBytes = 8 << 20
	DefaultMaxExports     = 128
)

// Check is one check's outcome.
type Check struct {
	Name   string `json:"name"`             // stable, snake_case
	Target string `json:"target,omitempty"` // the module path or capability class
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"` // why it failed, or what was found
}

// Report is an audit's outcome.
type Report struct {
	Checks []Check
	Timing Timing
}

// Timing is where an audit spent its time, summed over the modules (see
// wasmrun.Inspection for what each step measures).
type Timing struct {
	Validate   time.Duration // wazero's decoding and validation of the module as given
	Instrument time.Duration // table bounding and fuel instrumentation
	Compile    time.Duration // compiling the instrumented module
}

// Passed reports whether every check passed.
func (r Report) Passed() bool { return len(r.Failed()) == 0 }

// Failed returns the failed checks, in order.
func (r Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// Run audits in. Nothing of the modules runs. A module Run could not
// inspect because ctx ended fails module_valid: a caller acting on the
// verdict checks ctx first.
func Run(ctx context.Context, in Input) Report {
	in.MaxModuleBytes = positiveOr(in.MaxModuleBytes, DefaultMaxModuleBytes)
	in.MaxExports = positiveOr(in.MaxExports, DefaultMaxExports)
	r := &Report{}
	r.presence(in)
	for _, path := range slices.Sorted(maps.Keys(in.Modules)) {
		r.module(ctx, in, path)
	}
	r.capabilities(in.Capabilities, in.Max)
	return *r
}

func (r *Report) add(name, target string, passed bool, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Target: target, Passed: passed, Detail: fmt.Sprintf(format, args...)})
}

func positiveOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
