package config

import (
	"path/filepath"
	"reflect"
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
		"two providers":     {env: []string{"EXECLEDGER_WASM_SECRETS_DIR=/run/secrets", "EXECLEDGER_WASM_SECRETS_ENV_PREFIX=SKILL_"}, want: "set one secrets provider, not both"},
		"bad env prefix":    {env: []string{"EXECLEDGER_WASM_SECRETS_ENV_PREFIX=1X"}, want: `wasm.secrets_env_prefix: "1X" is not letters`},
		"config prefix":     {env: []string{"EXECLEDGER_WASM_SECRETS_ENV_PREFIX=EXEC"}, want: "wasm.secrets_env_prefix: \"EXEC\" overlaps EXECLEDGER_"},
		"no provider":       {env: []string{"EXECLEDGER_WASM_POLICY_SECRETS=API_TOKEN"}, want: "wasm.policy_secrets: secrets are allowed but no provider is set"},
		"bad secret name":   {env: []string{"EXECLEDGER_WASM_SECRETS_DIR=/s", "EXECLEDGER_WASM_POLICY_SECRETS=a-b"}, want: `wasm.policy_secrets: "a-b" is not letters`},
		"policy twice":      {env: []string{"EXECLEDGER_WASM_POLICY_CHANNELS=c,c"}, want: `wasm.policy_channels: "c" is listed twice`},
		"long prefix":       {env: []string{"EXECLEDGER_WASM_POLICY_STORAGE_PREFIXES=" + strings.Repeat("p", 257)}, want: "wasm.policy_storage_prefixes"},
		"module control":    {file: module("acme.a", "a.wasm", digest) + "capabilities = { storage_prefixes = [\"a\\u0001\"] }\n", want: "acme.a: capabilities.storage_prefixes"},
		"module secret":     {file: module("acme.a", "a.wasm", digest) + "[wasm.modules.capabilities]\nsecrets = [\"x.y\"]\n", want: `acme.a: capabilities.secrets: "x.y"`},
		"unknown cap":       {file: module("acme.a", "a.wasm", digest) + "[wasm.modules.capabilities]\nfiles = []\n", want: "wasm.modules.capabilities.files"},
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

func TestWasmCapabilities(t *testing.T) {
	p := writeFile(t, `
[wasm]
policy_secrets = ["API_TOKEN"]
policy_storage_prefixes = ["acme/"]
policy_channels = ["news"]
secrets_dir = "/run/secrets"

[[wasm.modules]]
tool = "acme.answer"
path = "answer.wasm"
sha256 = "`+digest+`"
[wasm.modules.capabilities]
secrets = ["API_TOKEN", "OTHER"]
storage_prefixes = ["acme/"]

[[wasm.modules]]
tool = "acme.plain"
path = "plain.wasm"
sha256 = "`+digest+`"
`)
	cfg, err := Load(p, []string{"EXECLEDGER_WASM_POLICY_HTTP_HOSTS=api.example.com, example.org"})
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Wasm
	if !reflect.DeepEqual(w.PolicyHTTPHosts, []string{"api.example.com", "example.org"}) || w.SecretsDir != "/run/secrets" ||
		w.PolicySecrets[0] != "API_TOKEN" || w.PolicyStoragePrefixes[0] != "acme/" || w.PolicyChannels[0] != "news" {
		t.Fatalf("wasm = %+v", w)
	}
	want := WasmCapabilities{Secrets: []string{"API_TOKEN", "OTHER"}, StoragePrefixes: []string{"acme/"}}
	if got := w.Modules[0].Capabilities; !reflect.DeepEqual(got, want) {
		t.Errorf("module 0's capabilities = %+v, want %+v", got, want)
	}
	if got := w.Modules[1].Capabilities; !reflect.DeepEqual(got, WasmCapabilities{}) {
		t.Errorf("module 1's capabilities = %+v, want none", got)
	}

	env, err := Load("", []string{"EXECLEDGER_WASM_SECRETS_ENV_PREFIX=SKILL_", "EXECLEDGER_WASM_POLICY_SECRETS=API_TOKEN"})
	if err != nil || env.Wasm.SecretsEnvPrefix != "SKILL_" {
		t.Fatalf("env provider: %+v, %v", env.Wasm, err)
	}
}
