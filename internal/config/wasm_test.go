package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestWasmModulesFromFile(t *testing.T) {
	p := writeFile(t, `
[wasm]
engine = "interpreter"

[[wasm.modules]]
tool = "acme.answer"
path = "skills/answer.wasm"
sha256 = "`+strings.ToUpper(digest)+`"

[[wasm.modules]]
tool = "acme.slow"
path = "/opt/skills/slow.wasm"
sha256 = "`+digest+`"
entrypoint = "main"
fuel_limit = 5
timeout = "2s"
`)
	cfg, err := Load(p, []string{"EXECLEDGER_WASM_ENABLED=true", "EXECLEDGER_WASM_FUEL_LIMIT=99"})
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Wasm
	if !w.Enabled || w.Engine != "interpreter" || w.FuelLimit != 99 || w.MemoryLimitPages != 1024 || len(w.Modules) != 2 {
		t.Fatalf("wasm = %+v", w)
	}
	// A relative path is the file's directory's; digests are lower case.
	if m := w.Modules[0]; m.Path != filepath.Join(filepath.Dir(p), "skills", "answer.wasm") || m.SHA256 != digest {
		t.Fatalf("module 0 = %+v", m)
	}
	if m := w.Modules[1]; m.Path != "/opt/skills/slow.wasm" || m.Entrypoint != "main" || m.FuelLimit != 5 || m.Timeout.Duration != 2*time.Second {
		t.Fatalf("module 1 = %+v", m)
	}
}

func TestWasmErrorsNameTheKey(t *testing.T) {
	module := func(tool, path, sum string) string {
		return "[[wasm.modules]]\ntool = \"" + tool + "\"\npath = \"" + path + "\"\nsha256 = \"" + sum + "\"\n"
	}
	for name, tc := range map[string]struct {
		file string
		env  []string
		want string
	}{
		"modules from env":  {env: []string{"EXECLEDGER_WASM_MODULES=x"}, want: "EXECLEDGER_WASM_MODULES: a list of tables: set it in the configuration file"},
		"bad engine":        {env: []string{"EXECLEDGER_WASM_ENGINE=jit"}, want: "wasm.engine"},
		"zero pages":        {env: []string{"EXECLEDGER_WASM_MEMORY_LIMIT_PAGES=0"}, want: "wasm.memory_limit_pages"},
		"too many pages":    {env: []string{"EXECLEDGER_WASM_MEMORY_LIMIT_PAGES=65537"}, want: "wasm.memory_limit_pages"},
		"zero fuel":         {env: []string{"EXECLEDGER_WASM_FUEL_LIMIT=0"}, want: "fuel_limit"},
		"negative instance": {env: []string{"EXECLEDGER_WASM_MAX_INSTANCES=-1"}, want: "max_instances"},
		"zero timeout":      {env: []string{"EXECLEDGER_WASM_TIMEOUT=0s"}, want: "timeout"},
		"undotted tool":     {file: module("answer", "a.wasm", digest), want: `wasm.modules[0]: tool: "answer" is not a dotted`},
		"upper-case tool":   {file: module("Acme.answer", "a.wasm", digest), want: "wasm.modules[0]: tool"},
		"twice":             {file: module("acme.a", "a.wasm", digest) + module("acme.a", "b.wasm", digest), want: `wasm.modules[1]: tool: "acme.a" is registered twice`},
		"plugin.run taken":  {file: "[wasm]\nallow_inline = true\n" + module("plugin.run", "a.wasm", digest), want: "registered twice"},
		"short digest":      {file: module("acme.a", "a.wasm", digest[:63]), want: "acme.a: sha256"},
		"not hex":           {file: module("acme.a", "a.wasm", "g"+digest[1:]), want: "acme.a: sha256"},
		"no path":           {file: module("acme.a", "", digest), want: "acme.a: path: must not be empty"},
		"negative fuel":     {file: module("acme.a", "a.wasm", digest) + "fuel_limit = -1\n", want: "acme.a: fuel_limit"},
		"unknown key":       {file: module("acme.a", "a.wasm", digest) + "digest = \"x\"\n", want: "wasm.modules.digest"},
	} {
		path := ""
		if tc.file != "" {
			path = writeFile(t, tc.file)
		}
		_, err := Load(path, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
	}
}
