package audit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/sandbox/wasmrun"
)

// wat compiles testdata/<name>.wat with wat2wasm.
func wat(t *testing.T, name string) []byte {
	t.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm (apt-get install wabt; scripts/ensure-test-deps.sh) is needed: %v", err)
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	if msg, err := exec.Command(tool, filepath.Join("testdata", name+".wat"), "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm %s: %v\n%s", name, err, msg)
	}
	return readFile(t, out)
}

// goWasm builds testdata/gomod/<name> with GOOS=wasip1 GOARCH=wasm.
func goWasm(t *testing.T, name string) []byte {
	t.Helper()
	tool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build a Go skill: %v", err)
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command(tool, "build", "-o", out, "./testdata/gomod/"+name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, msg)
	}
	return readFile(t, out)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clean is an input that passes every check.
func clean(t *testing.T) Input {
	return Input{Modules: map[string][]byte{"modules/m.wasm": wat(t, "clean")},
		Entrypoints: []Entrypoint{{Tool: "acme.m", Module: "modules/m.wasm"}},
		Capabilities: Capabilities{HTTPHosts: []string{"api.example.com"}, StoragePrefixes: []string{"acme/m/"},
			Secrets: []string{"API_TOKEN"}, Channels: []string{"acme.events"}},
		Max: Max{HTTPHosts: []string{"api.example.com"}, StoragePrefixes: []string{"acme/"},
			Secrets: []string{"API_TOKEN"}, Channels: []string{"acme.events"}}}
}

// names returns "name[target]" of each check, or of each failed one.
func names(checks []Check) string {
	var out []string
	for _, c := range checks {
		out = append(out, c.Name+"["+c.Target+"]")
	}
	return strings.Join(out, " ")
}

func TestCleanModulePasses(t *testing.T) {
	t.Parallel()
	r := Run(context.Background(), clean(t))
	if !r.Passed() {
		t.Fatalf("failed: %+v", r.Failed())
	}
	const m = "modules/m.wasm"
	want := "module_present[" + m + "] module_size[" + m + "] module_valid[" + m + "] module_instrumentable[" + m + "] " +
		"imports_known[" + m + "] exports_limit[" + m + "] entrypoint_exported[" + m + "] wasi_filesystem_imports[" + m + "] " +
		"filesystem_capabilities[filesystem] wildcards[http_hosts] wildcards[secrets] wildcards[storage_prefixes] wildcards[channels] " +
		"capabilities_within_max[http_hosts] capabilities_within_max[secrets] capabilities_within_max[storage_prefixes] capabilities_within_max[channels]"
	if got := names(r.Checks); got != want {
		t.Errorf("checks\n %s\nwant\n %s", got, want)
	}
	if tm := r.Timing; tm.Validate <= 0 || tm.Instrument <= 0 || tm.Compile <= 0 {
		t.Errorf("timing %+v", tm)
	}
}

func TestEachCheckFails(t *testing.T) {
	t.Parallel()
	const m = "modules/m.wasm"
	for _, tc := range []struct {
		name   string
		change func(*Input)
		want   string
	}{
		{"a tool's module is missing", func(in *Input) {
			in.Entrypoints = append(in.Entrypoints, Entrypoint{Tool: "acme.gone", Module: "modules/gone.wasm"})
		}, "module_present[modules/gone.wasm]"},
		{"a module serves no tool", func(in *Input) { in.Modules["modules/extra.wasm"] = wat(t, "clean") },
			"module_present[modules/extra.wasm]"},
		{"too large", func(in *Input) { in.MaxModuleBytes = 10 }, "module_size[" + m + "]"},
		{"too large for tier A", func(in *Input) { in.Wasm.MaxModuleBytes = 10 }, "module_size[" + m + "]"},
		{"not WebAssembly", func(in *Input) { in.Modules[m] = []byte("\x00asm\x01\x00\x00\x00\xff") }, "module_valid[" + m + "]"},
		{"memory above the limit", func(in *Input) { in.Modules[m] = wat(t, "big_memory") }, "module_valid[" + m + "]"},
		{"not instrumentable", func(in *Input) { in.Modules[m] = wat(t, "reserved") }, "module_instrumentable[" + m + "]"},
		{"unknown import", func(in *Input) { in.Modules[m] = wat(t, "unknown") }, "imports_known[" + m + "]"},
		{"too many exports", func(in *Input) { in.Modules[m] = wat(t, "exports") }, "exports_limit[" + m + "]"},
		{"no such entrypoint", func(in *Input) { in.Entrypoints[0].Export = "main" }, "entrypoint_exported[" + m + "]"},
		{"file functions", func(in *Input) { in.Modules[m] = wat(t, "files") }, "wasi_filesystem_imports[" + m + "]"},
		{"filesystem roots", func(in *Input) { in.Capabilities.FilesystemReadRoots = []string{"/data"} },
			"filesystem_capabilities[filesystem]"},
		{"a wildcard the configuration does not allow", func(in *Input) {
			in.Capabilities.WildcardOptIn, in.Capabilities.HTTPHosts = true, []string{"*.example.com"}
			in.Max.HTTPHosts = []string{"*.example.com"}
		}, "wildcards[http_hosts]"},
		{"a wildcard the manifest does not opt into", func(in *Input) {
			in.Capabilities.Secrets, in.Max.Secrets, in.Max.AllowWildcards = []string{"*"}, []string{"*"}, true
		}, "wildcards[secrets]"},
		{"a host outside", func(in *Input) { in.Capabilities.HTTPHosts = []string{"evil.example.net"} },
			"capabilities_within_max[http_hosts]"},
		{"a host under a policy wildcard, wildcards off", func(in *Input) { in.Max.HTTPHosts = []string{"*.example.com"} },
			"capabilities_within_max[http_hosts]"},
		{"a secret outside", func(in *Input) { in.Capabilities.Secrets = []string{"ROOT_TOKEN"} },
			"capabilities_within_max[secrets]"},
		{"a storage prefix outside", func(in *Input) { in.Capabilities.StoragePrefixes = []string{"ac"} },
			"capabilities_within_max[storage_prefixes]"},
		{"a channel outside", func(in *Input) { in.Capabilities.Channels = []string{"ops"} },
			"capabilities_within_max[channels]"},
	} {
		in := clean(t)
		tc.change(&in)
		if got := names(Run(context.Background(), in).Failed()); got != tc.want {
			t.Errorf("%s: failed %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEveryFailureIsListed(t *testing.T) {
	t.Parallel()
	in := clean(t)
	in.Modules["modules/m.wasm"] = wat(t, "files")
	in.Modules["modules/x.wasm"] = wat(t, "unknown")
	in.Entrypoints = append(in.Entrypoints, Entrypoint{Tool: "acme.x", Module: "modules/x.wasm", Export: "main"})
	in.Capabilities.Channels = []string{"ops"}
	in.Capabilities.FilesystemWriteRoots = []string{"/"}
	r := Run(context.Background(), in)
	want := "wasi_filesystem_imports[modules/m.wasm] " +
		"imports_known[modules/x.wasm] entrypoint_exported[modules/x.wasm] " +
		"filesystem_capabilities[filesystem] capabilities_within_max[channels]"
	if got := names(r.Failed()); got != want {
		t.Fatalf("failed\n %s\nwant\n %s", got, want)
	}
	if d := r.Failed()[0].Detail; !strings.Contains(d, "fd_readdir, path_open") {
		t.Errorf("detail %q does not name the imports", d)
	}
	if d := r.Failed()[4].Detail; !strings.Contains(d, "channel ops") { // the skill commands show it
		t.Errorf("detail %q does not name the channel", d)
	}
}

// TestSocketImports: a module importing WASI's socket functions fails
// imports_known, naming each and why, though the skill asks for an http
// host the policy grants (clean's): no capability grants raw sockets.
func TestSocketImports(t *testing.T) {
	t.Parallel()
	in := clean(t)
	in.Modules["modules/m.wasm"] = wat(t, "sockets")
	failed := Run(context.Background(), in).Failed()
	if got := names(failed); got != "imports_known[modules/m.wasm]" {
		t.Fatalf("failed %q, want imports_known[modules/m.wasm]", got)
	}
	for _, want := range []string{"function wasi_snapshot_preview1.sock_accept", "function wasi_snapshot_preview1.sock_send",
		"no capability grants raw sockets"} {
		if !strings.Contains(failed[0].Detail, want) {
			t.Errorf("detail %q does not say %q", failed[0].Detail, want)
		}
	}
}

func TestWithinMax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*Input)
	}{
		{"a host in another spelling", func(in *Input) { in.Capabilities.HTTPHosts = []string{"API.Example.COM."} }},
		{"a host under an allowed wildcard", func(in *Input) {
			in.Max.HTTPHosts, in.Max.AllowWildcards = []string{"*.example.com"}, true
		}},
		{"a wildcard under a wider one", func(in *Input) {
			in.Capabilities.HTTPHosts, in.Capabilities.WildcardOptIn = []string{"*.eu.example.com"}, true
			in.Max.HTTPHosts, in.Max.AllowWildcards = []string{".example.com"}, true
		}},
		{"a storage prefix equal to the policy's", func(in *Input) { in.Capabilities.StoragePrefixes = []string{"acme/"} }},
		{"exports at the limit", func(in *Input) { in.Modules["modules/m.wasm"], in.MaxExports = wat(t, "exports"), 129 }},
		{"a tool's own export", func(in *Input) { in.Entrypoints[0].Export = "_start" }},
	} {
		in := clean(t)
		tc.change(&in)
		if r := Run(context.Background(), in); !r.Passed() {
			t.Errorf("%s: failed %s", tc.name, names(r.Failed()))
		}
	}
}

// TestGoModules: Go's wasip1 port imports path_open into a program that
// opens files, and no path_* function into one that does not. The
// interpreter keeps the race detector's compile of 2 MB modules short.
func TestGoModules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, want string }{
		{"files", "wasi_filesystem_imports[modules/m.wasm]"},
		{"stdio", ""},
	} {
		in := clean(t)
		in.Modules["modules/m.wasm"], in.Wasm.Engine = goWasm(t, tc.name), wasmrun.EngineInterpreter
		r := Run(context.Background(), in)
		if got := names(r.Failed()); got != tc.want {
			t.Errorf("%s: failed %q, want %q", tc.name, got, tc.want)
		}
		if tc.want != "" && !strings.Contains(r.Failed()[0].Detail, "path_open") {
			t.Errorf("%s: detail %q", tc.name, r.Failed()[0].Detail)
		}
	}
}
