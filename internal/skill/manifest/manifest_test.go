package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func full(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edit replaces the first old in the full manifest by new.
func edit(t testing.TB, old, new string) string {
	t.Helper()
	s := full(t)
	if !strings.Contains(s, old) {
		t.Fatalf("testdata/full.toml lacks %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

func parse(t *testing.T, doc string) *Manifest {
	t.Helper()
	m, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

func TestParseFull(t *testing.T) {
	t.Parallel()
	got := parse(t, full(t))
	for i, tool := range got.Tools {
		if tool.input == nil || (tool.output == nil) != (tool.OutputSchema == nil) {
			t.Errorf("tool %d: schemas not compiled", i)
		}
		got.Tools[i].input, got.Tools[i].output = nil, nil
	}
	want := &Manifest{
		ManifestVersion: 1, SkillID: "acme.hello", Name: "Hello", Version: "1.2.0-rc.1", Publisher: "acme",
		Description: "Says hello.",
		Tools: []Tool{{
			ID: "acme.hello", Name: "Say hello", Description: "Greets by name.", Module: "modules/hello.wasm",
			InputSchema:      json.RawMessage(`{"additionalProperties":false,"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}`),
			OutputSchema:     json.RawMessage(`{"type":"object"}`),
			RequiresApproval: true,
		}, {
			ID: "acme.hello.twice", Name: "Say hello twice", Description: "Greets twice.", Module: "modules/hello.wasm",
			Entrypoint: "twice", InputSchema: json.RawMessage(`{"type":"object"}`),
		}},
		Capabilities: Capabilities{
			HTTPEgressAllowlist: []string{"api.example.com", "*.example.org"}, Secrets: []string{"DEMO_TOKEN"},
			StoragePrefixes: []string{"acme.hello/"}, Channels: []string{"alerts"},
			FilesystemReadRoots: []string{}, FilesystemWriteRoots: []string{}, WildcardOptIn: true,
		},
		Quotas: Quotas{WallClockTimeoutMS: 30000, FuelBudget: 10_000_000, MaxMemoryBytes: 64 << 20},
		Compat: Compat{MinExecledger: "0.1.0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseMinimal(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/minimal.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, string(b))
	c := m.Capabilities
	for _, list := range [][]string{c.HTTPEgressAllowlist, c.Secrets, c.StoragePrefixes, c.Channels, c.FilesystemReadRoots, c.FilesystemWriteRoots} {
		if list == nil || len(list) != 0 {
			t.Errorf("capability list %#v, want empty and not nil", list)
		}
	}
	if m.Quotas != (Quotas{}) || m.Compat != (Compat{}) || m.Tools[0].OutputSchema != nil || m.Tools[0].RequiresApproval {
		t.Errorf("defaults: %+v", m)
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"schemas as strings":    edit(t, `input_schema = { type = "object" }`, `input_schema = '''{"type": "object", "minProperties": 0}'''`),
		"wildcards with opt-in": edit(t, `secrets = ["DEMO_TOKEN"]`, `secrets = ["*"]`),
		"IP literals":           edit(t, `"api.example.com"`, `"192.0.2.1", "2001:db8::1"`),
		"quotas of 0":           edit(t, "fuel_budget = 10000000", "fuel_budget = 0"),
		"inline risk":           edit(t, "[tools.risk]\nrequires_approval = true", "risk = { requires_approval = true }"),
		"default entrypoint":    edit(t, `entrypoint = "twice"`, `entrypoint = ""`),
		"inline tools array": "manifest_version = 1\nskill_id = \"a.b\"\nname = \"n\"\nversion = \"1.0.0\"\npublisher = \"a\"\n" +
			"tools = [\n  { id = \"a.b\", name = \"n\", description = \"d\", module = \"modules/b.wasm\", input_schema = { type = \"object\" } },\n]\n",
	} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// refusal is a manifest Parse refuses and the problems it must report,
// each "skill.toml:LINE: KEY: MESSAGE" or a prefix of one, in order.
type refusal struct {
	name, doc string
	want      []string
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	const bigString = "x"
	const head = "manifest_version = 1\nskill_id = \"a.b\"\nname = \"n\"\nversion = \"1.0.0\"\npublisher = \"a\"\n"
	many := full(t)
	for i := range maxTools {
		many += fmt.Sprintf("\n[[tools]]\nid = \"acme.hello.t%d\"\nname = \"t\"\ndescription = \"t\"\nmodule = \"modules/t.wasm\"\ninput_schema = { type = \"object\" }\n", i)
	}
	for _, tc := range []refusal{
		// The document.
		{"syntax error", "manifest_version = 1\nskill_id = \n", []string{"skill.toml:2: TOML: "}},
		{"duplicate key", "name = \"a\"\nname = \"b\"\n", []string{"skill.toml:2: TOML: "}},
		{"too large", strings.Repeat("#", MaxSize+1), []string{"skill.toml: is 65537 bytes; the limit is 65536"}},
		// Deep nesting, refused before the TOML decoder, whose time grows with its square.
		{"deep arrays", "\na = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000), []string{"skill.toml:2: nests keys, arrays and tables deeper than 64 levels"}},
		{"deep inline tables", "a = " + strings.Repeat("{b=", 15000) + "1" + strings.Repeat("}", 15000), []string{"skill.toml:1: nests keys, arrays and tables deeper than 64 levels"}},
		{"a long dotted key", "a." + strings.Repeat("b.", 20000) + "c = 1", []string{"skill.toml:1: nests keys, arrays and tables deeper than 64 levels"}},
		{"a long table header", "[[" + strings.Repeat("b.", 20000) + "c]]", []string{"skill.toml:1: nests keys, arrays and tables deeper than 64 levels"}},
		{"a deep JSON schema", edit(t, `input_schema = { type = "object" }`, `input_schema = '{"type": "object", "not": `+strings.Repeat(`{"not":`, 70)+"{}"+strings.Repeat("}", 71)+"'"),
			[]string{"skill.toml:25: tools.1.input_schema: nests deeper than 64 levels"}},
		{"a table where a string goes", edit(t, `name = "Hello"`, `name = { x = 1 }`), []string{"skill.toml:3: name: is a table; want a string"}},
		{"a string where a number goes", edit(t, "fuel_budget = 10000000", `fuel_budget = "lots"`),
			[]string{"skill.toml:40: quotas.fuel_budget: is a string; want an integer"}},
		{"a float where an integer goes", edit(t, "fuel_budget = 10000000", `fuel_budget = 1e7`),
			[]string{"skill.toml:40: quotas.fuel_budget: is a float; want an integer"}},
		{"a string where a table goes", head + "tools = [{}]\nquotas = 'none'\n", []string{"skill.toml:6: tools.0.id: missing", "skill.toml:6: tools.0.name: missing",
			"skill.toml:6: tools.0.description: missing", "skill.toml:6: tools.0.module: missing", "skill.toml:6: tools.0.input_schema: missing",
			"skill.toml:7: quotas: is a string; want a table"}},
		{"tools not tables", head + "tools = 1", []string{"skill.toml:6: tools: is an integer; want an array of tables"}},
		{"a tool not a table", head + "tools = [1]", []string{"skill.toml:6: tools.0: is an integer; want a table", "skill.toml:6: tools: is empty"}},

		// Unknown keys, in every table.
		{"unknown top-level key", edit(t, `publisher = "acme"`, "publisher = \"acme\"\npublsher = 1"), []string{"skill.toml:6: publsher: unknown key"}},
		{"unknown key in a tool", edit(t, `entrypoint = "twice"`, "entrypoint = \"twice\"\nmodul = 1"), []string{"skill.toml:25: tools.1.modul: unknown key"}},
		{"unknown key in risk", edit(t, "requires_approval = true", "requires_approval = true\nlevel = 3"), []string{"skill.toml:18: tools.0.risk.level: unknown key"}},
		{"unknown key in an inline risk", edit(t, "[tools.risk]\nrequires_approval = true", "risk = { requires_approval = true,\n level = 3 }"),
			[]string{"skill.toml:17: tools.0.risk.level: unknown key"}},
		{"unknown key in capabilities", edit(t, `channels = ["alerts"]`, "channels = [\"alerts\"]\nhttp_egres_allowlist = []"),
			[]string{"skill.toml:32: capabilities.http_egres_allowlist: unknown key"}},
		{"unknown key in filesystem", edit(t, "write_roots = []", "write_roots = []\nexec_roots = []"), []string{"skill.toml:37: capabilities.filesystem.exec_roots: unknown key"}},
		{"unknown key in quotas", edit(t, "fuel_budget = 10000000", "fuel_budget = 10000000\ncpu = 1"), []string{"skill.toml:41: quotas.cpu: unknown key"}},
		{"unknown key in compat", edit(t, `min_execledger = "0.1.0"`, "min_execledger = \"0.1.0\"\nmax = 1"), []string{"skill.toml:45: compat.max: unknown key"}},
		{"unknown table", full(t) + "\n[integrity]\nfiles = []\n", []string{"skill.toml:46: integrity: unknown key"}},
		{"a quoted unknown key", edit(t, `publisher = "acme"`, "publisher = \"acme\"\n\"pub lisher\" = 1"), []string{`skill.toml:6: "pub lisher": unknown key`}},

		// The skill.
		{"missing keys", "[[tools]]\n", []string{"skill.toml: manifest_version: missing", "skill.toml: skill_id: missing",
			"skill.toml: name: missing", "skill.toml: version: missing", "skill.toml: publisher: missing",
			"skill.toml:1: tools.0.id: missing", "skill.toml:1: tools.0.name: missing", "skill.toml:1: tools.0.description: missing",
			"skill.toml:1: tools.0.module: missing", "skill.toml:1: tools.0.input_schema: missing"}},
		{"manifest version 2", edit(t, "manifest_version = 1", "manifest_version = 2"), []string{"skill.toml:1: manifest_version: 2 is not a version"}},
		{"reserved id", edit(t, `skill_id = "acme.hello"`, `skill_id = "ledger.hello"`), []string{`skill.toml:2: skill_id: "ledger.hello" begins with "ledger", a name Execledger reserves`,
			"skill.toml:9: tools.0.id: ", "skill.toml:20: tools.1.id: "}},
		{"undotted id", edit(t, `skill_id = "acme.hello"`, `skill_id = "hello"`), []string{`skill.toml:2: skill_id: "hello" is not an id`,
			"skill.toml:9: tools.0.id: ", "skill.toml:20: tools.1.id: "}},
		{"upper-case id", edit(t, `skill_id = "acme.hello"`, `skill_id = "Acme.hello"`), []string{`skill.toml:2: skill_id: "Acme.hello" is not an id`,
			"skill.toml:9: tools.0.id: ", "skill.toml:20: tools.1.id: "}},
		{"empty name", edit(t, `name = "Hello"`, `name = ""`), []string{"skill.toml:3: name: is empty"}},
		{"long name", edit(t, `name = "Hello"`, `name = "`+strings.Repeat(bigString, 129)+`"`), []string{"skill.toml:3: name: is 129 bytes; the limit is 128"}},
		{"control character in a name", edit(t, `name = "Hello"`, `name = "Hel\tlo"`), []string{"skill.toml:3: name: holds a control character"}},
		{"long description", edit(t, `description = "Says hello."`, `description = "`+strings.Repeat(bigString, 1025)+`"`),
			[]string{"skill.toml:6: description: is 1025 bytes; the limit is 1024"}},
		{"short version", edit(t, `version = "1.2.0-rc.1"`, `version = "1.2"`), []string{`skill.toml:4: version: "1.2" is not a semantic version (MAJOR.MINOR.PATCH)`}},
		{"version with v", edit(t, `version = "1.2.0-rc.1"`, `version = "v1.2.3"`), []string{`skill.toml:4: version: "v1.2.3" is not a semantic version (MAJOR.MINOR.PATCH): no leading v`}},
		{"version with build", edit(t, `version = "1.2.0-rc.1"`, `version = "1.2.3+build"`), []string{`skill.toml:4: version: "1.2.3+build" carries build metadata`}},
		{"bad publisher", edit(t, `publisher = "acme"`, `publisher = "Acme Inc"`), []string{`skill.toml:5: publisher: "Acme Inc" is not a publisher name`}},

		// Tools.
		{"no tools", head + "tools = []\n",
			[]string{"skill.toml:6: tools: is empty"}},
		{"too many tools", many, []string{"skill.toml:8: tools: 66 tools; the limit is 64"}},
		{"tool outside the skill", edit(t, `id = "acme.hello.twice"`, `id = "evil.twice"`),
			[]string{`skill.toml:20: tools.1.id: "evil.twice" is neither the skill id acme.hello nor under it`}},
		{"tool id a prefix but not a segment", edit(t, `id = "acme.hello.twice"`, `id = "acme.hellotwice"`), []string{"skill.toml:20: tools.1.id: "}},
		{"duplicate tool", edit(t, `id = "acme.hello.twice"`, `id = "acme.hello"`), []string{`skill.toml:20: tools.1.id: "acme.hello" is defined twice`}},
		{"module outside modules", edit(t, `module = "modules/hello.wasm"`, `module = "../hello.wasm"`), []string{`skill.toml:12: tools.0.module: "../hello.wasm" is not a module path`}},
		{"module in a subdirectory", edit(t, `module = "modules/hello.wasm"`, `module = "modules/a/b.wasm"`), []string{"skill.toml:12: tools.0.module: "}},
		{"module with ..", edit(t, `module = "modules/hello.wasm"`, `module = "modules/a..b.wasm"`), []string{"skill.toml:12: tools.0.module: "}},
		{"module not wasm", edit(t, `module = "modules/hello.wasm"`, `module = "modules/hello.so"`), []string{"skill.toml:12: tools.0.module: "}},
		{"bad entrypoint", edit(t, `entrypoint = "twice"`, `entrypoint = "2x"`), []string{`skill.toml:24: tools.1.entrypoint: "2x" is not an export name`}},
		{"approval not a boolean", edit(t, "requires_approval = true", `requires_approval = "yes"`),
			[]string{"skill.toml:17: tools.0.risk.requires_approval: is a string; want true or false"}},

		// Schemas.
		{"missing input schema", edit(t, "input_schema = { type = \"object\" }\n", ""), []string{"skill.toml:19: tools.1.input_schema: missing"}},
		{"input schema not of an object", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "string" }`),
			[]string{`skill.toml:25: tools.1.input_schema: an input schema describes an object: its "type" must be "object"`}},
		{"schema not JSON", edit(t, `output_schema = '''{"type": "object"}'''`, `output_schema = '{"type": '`), []string{"skill.toml:14: tools.0.output_schema: is not JSON"}},
		{"schema not an object", edit(t, `output_schema = '''{"type": "object"}'''`, `output_schema = 'true'`),
			[]string{"skill.toml:14: tools.0.output_schema: is not a JSON Schema object"}},
		{"schema of the wrong type", edit(t, `output_schema = '''{"type": "object"}'''`, `output_schema = 3`),
			[]string{"skill.toml:14: tools.0.output_schema: is an integer; want a table or a string holding JSON"}},
		{"schema holding a date", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", const = 2024-01-01 }`),
			[]string{"skill.toml:25: tools.1.input_schema: holds a TOML date or time"}},
		{"schema that does not compile", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", minProperties = "two" }`),
			[]string{"skill.toml:25: tools.1.input_schema: is not a valid JSON Schema (draft 2020-12 unless $schema says otherwise): /minProperties: got string, want integer"}},
		{"schema with a bad pointer", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", "$ref" = "#/nope" }`),
			[]string{"skill.toml:25: tools.1.input_schema: uses $ref"}},
		{"schema with a bad pattern", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", properties = { a = { pattern = "(" } } }`),
			[]string{"skill.toml:25: tools.1.input_schema: is not a valid JSON Schema"}},
		{"remote $ref", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", "$ref" = "https://example.com/x.json" }`),
			[]string{"skill.toml:25: tools.1.input_schema: uses $ref"}},
		{"schema refers to itself", edit(t, `input_schema = { type = "object" }`,
			`input_schema = { type = "object", "$defs" = { n = { type = "integer" } }, properties = { a = { "$ref" = "#/$defs/n" } } }`),
			[]string{"skill.toml:25: tools.1.input_schema: uses $ref"}},
		{"remote $schema", edit(t, `output_schema = '''{"type": "object"}'''`, `output_schema = '{"$schema": "https://example.com/meta"}'`),
			[]string{"skill.toml:14: tools.0.output_schema: refers to https://example.com/meta"}},
		{"file $ref", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", "$ref" = "file:///etc/passwd" }`),
			[]string{"skill.toml:25: tools.1.input_schema: uses $ref"}},
		{"relative $ref", edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", "$ref" = "other.json" }`),
			[]string{"skill.toml:25: tools.1.input_schema: uses $ref"}},

		// Capabilities.
		{"host with a scheme", edit(t, `"api.example.com"`, `"https://api.example.com"`),
			[]string{`skill.toml:28: capabilities.http_egress_allowlist.0: "https://api.example.com" is not a lower-case host name`}},
		{"host with a port", edit(t, `"api.example.com"`, `"api.example.com:443"`), []string{"skill.toml:28: capabilities.http_egress_allowlist.0: "}},
		{"upper-case host", edit(t, `"api.example.com"`, `"API.example.com"`), []string{"skill.toml:28: capabilities.http_egress_allowlist.0: "}},
		{"host with a trailing dot", edit(t, `"api.example.com"`, `"api.example.com."`), []string{"skill.toml:28: capabilities.http_egress_allowlist.0: "}},
		{"bracketed IPv6", edit(t, `"api.example.com"`, `"[2001:db8::1]"`), []string{"skill.toml:28: capabilities.http_egress_allowlist.0: "}},
		{"wildcard over a TLD", edit(t, `"*.example.org"`, `"*.org"`), []string{`skill.toml:28: capabilities.http_egress_allowlist.1: "*.org" is not a wildcard this Execledger allows`}},
		{"host listed twice", edit(t, `"*.example.org"`, `"api.example.com"`), []string{`skill.toml:28: capabilities.http_egress_allowlist.1: "api.example.com" is listed twice`}},
		{"host entry not a string", edit(t, `"*.example.org"`, `1`), []string{"skill.toml:28: capabilities.http_egress_allowlist.1: is an integer; want a string"}},
		{"hosts not an array", edit(t, `http_egress_allowlist = ["api.example.com", "*.example.org"]`, `http_egress_allowlist = "api.example.com"`),
			[]string{"skill.toml:28: capabilities.http_egress_allowlist: is a string; want an array of strings"}},
		{"bad secret", edit(t, `"DEMO_TOKEN"`, `"DEMO-TOKEN"`), []string{`skill.toml:29: capabilities.secrets.0: "DEMO-TOKEN" is not a secret name`}},
		{"storage prefix with a star", edit(t, `"acme.hello/"`, `"acme.*"`), []string{`skill.toml:30: capabilities.storage_prefixes.0: "acme.*" is not a storage prefix`}},
		{"empty storage prefix", edit(t, `"acme.hello/"`, `""`), []string{"skill.toml:30: capabilities.storage_prefixes.0: "}},
		{"bad channel", edit(t, `"alerts"`, `"Alerts"`), []string{`skill.toml:31: capabilities.channels.0: "Alerts" is not a channel name`}},
		{"wildcards without opt-in", edit(t, "wildcard_opt_in = true", "wildcard_opt_in = false"),
			[]string{`skill.toml:28: capabilities.http_egress_allowlist.1: "*.example.org" is a wildcard, refused unless wildcard_opt_in = true`}},
		{"every kind of wildcard without opt-in", strings.NewReplacer("wildcard_opt_in = true", "", `"DEMO_TOKEN"`, `"*"`, `"acme.hello/"`, `"*"`, `"alerts"`, `"*"`).Replace(full(t)),
			[]string{"skill.toml:28: capabilities.http_egress_allowlist.1: ", "skill.toml:29: capabilities.secrets.0: ",
				"skill.toml:30: capabilities.storage_prefixes.0: ", "skill.toml:31: capabilities.channels.0: "}},
		{"filesystem read roots", edit(t, "read_roots = []", "read_roots = [\n  \"/etc\",\n  \"/home\",\n]"),
			[]string{"skill.toml:36: capabilities.filesystem.read_roots.0: " + fsRefused, "skill.toml:37: capabilities.filesystem.read_roots.1: " + fsRefused}},
		{"filesystem write roots", edit(t, "write_roots = []", `write_roots = ["/tmp"]`), []string{"skill.toml:36: capabilities.filesystem.write_roots.0: " + fsRefused}},

		// Quotas and compat.
		{"timeout too long", edit(t, "wall_clock_timeout_ms = 30000", "wall_clock_timeout_ms = 600001"),
			[]string{"skill.toml:39: quotas.wall_clock_timeout_ms: 600001 is out of range: 1 to 600000"}},
		{"negative fuel", edit(t, "fuel_budget = 10000000", "fuel_budget = -1"), []string{"skill.toml:40: quotas.fuel_budget: -1 is out of range"}},
		{"too much fuel", edit(t, "fuel_budget = 10000000", "fuel_budget = 1_000_000_000_001"), []string{"skill.toml:40: quotas.fuel_budget: "}},
		{"memory not in pages", edit(t, "max_memory_bytes = 67108864", "max_memory_bytes = 100000"),
			[]string{"skill.toml:41: quotas.max_memory_bytes: 100000 is not a multiple of 65536"}},
		{"memory under a page", edit(t, "max_memory_bytes = 67108864", "max_memory_bytes = 1024"),
			[]string{"skill.toml:41: quotas.max_memory_bytes: 1024 is out of range", "skill.toml:41: quotas.max_memory_bytes: 1024 is not a multiple"}},
		{"memory over 4 GiB", edit(t, "max_memory_bytes = 67108864", "max_memory_bytes = 4295032832"), []string{"skill.toml:41: quotas.max_memory_bytes: 4295032832 is out of range"}},
		{"bad min_execledger", edit(t, `min_execledger = "0.1.0"`, `min_execledger = "0.1"`), []string{`skill.toml:44: compat.min_execledger: "0.1" is not a semantic version`}},

		// Several at once, in line order, type errors included.
		{"several at once", edit(t, `version = "1.2.0-rc.1"`, "version = \"x\"\ncolour = 1") + "\n[extra]\n",
			[]string{"skill.toml:4: version: ", "skill.toml:5: colour: unknown key", "skill.toml:47: extra: unknown key"}},
		{"several with a type error", strings.NewReplacer("fuel_budget = 10000000", `fuel_budget = "x"`, "manifest_version = 1", "manifest_version = 1\nzz = 0",
			`id = "acme.hello.twice"`, `id = "acme.hello"`).Replace(full(t)),
			[]string{"skill.toml:2: zz: unknown key", `skill.toml:21: tools.1.id: "acme.hello" is defined twice`, "skill.toml:41: quotas.fuel_budget: is a string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkRefusal(t, tc)
		})
	}
}

func checkRefusal(t *testing.T, tc refusal) {
	t.Helper()
	_, err := Parse([]byte(tc.doc))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("Parse: %v, want a *ParseError", err)
	}
	if len(pe.Errors) != len(tc.want) {
		t.Fatalf("%d problems, want %d:\n%v", len(pe.Errors), len(tc.want), err)
	}
	for i, w := range tc.want {
		if got := pe.Errors[i].String(); !strings.HasPrefix(got, w) {
			t.Errorf("problem %d: %q\nwant %q...", i, got, w)
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(pe.Errors) {
		t.Errorf("Error() is not one problem per line: %q", err)
	}
}

func TestWildcards(t *testing.T) {
	t.Parallel()
	m := parse(t, strings.NewReplacer(`"DEMO_TOKEN"`, `"*"`, `"alerts"`, `"alerts", "*"`).Replace(full(t)))
	if got, want := m.Capabilities.Wildcards(), []string{"*.example.org", "*", "*"}; !slices.Equal(got, want) {
		t.Errorf("Wildcards() = %q, want %q", got, want)
	}
}

func TestSchemaForms(t *testing.T) {
	t.Parallel()
	asTable := parse(t, edit(t, `input_schema = { type = "object" }`, `input_schema = { type = "object", maxProperties = 3, description = "<a & b>" }`))
	asString := parse(t, edit(t, `input_schema = { type = "object" }`, `input_schema = ' { "type" : "object", "description": "<a & b>", "maxProperties": 3 } '`))
	want := `{"description":"<a & b>","maxProperties":3,"type":"object"}`
	for _, m := range []*Manifest{asTable, asString} {
		if got := string(m.Tool("acme.hello.twice").InputSchema); got != want {
			t.Errorf("InputSchema %s, want %s", got, want)
		}
	}
}

func TestManifestMethods(t *testing.T) {
	t.Parallel()
	m := parse(t, edit(t, `module = "modules/hello.wasm"`, `module = "modules/a.wasm"`))
	if got := m.Modules(); !slices.Equal(got, []string{"modules/a.wasm", "modules/hello.wasm"}) {
		t.Errorf("Modules() = %q", got)
	}
	if m.Tool("acme.hello.twice") != &m.Tools[1] || m.Tool("acme.nope") != nil {
		t.Error("Tool(id) finds the wrong tool")
	}
	for running, ok := range map[string]bool{"": true, "dev": true, "0.1.0": true, "v0.2.0": true, "1.0.0": true,
		"0.0.9": false, "0.1.0-rc.1": false, "banana": false} {
		if err := m.CheckCompat(running); (err == nil) != ok {
			t.Errorf("CheckCompat(%q) = %v", running, err)
		}
	}
}

func TestValidateInput(t *testing.T) {
	t.Parallel()
	m := parse(t, full(t))
	tool := m.Tool("acme.hello")
	if err := tool.ValidateInput(json.RawMessage(`{"name":"ada"}`)); err != nil {
		t.Errorf("valid input: %v", err)
	}
	for in, want := range map[string]string{
		`{}`:                           "input: /: missing property 'name'",
		`{"name": 3}`:                  "input: /name: got number, want string",
		`{"name":"a","x":1}`:           "input: /: additional properties 'x' not allowed",
		`{"name":`:                     "input is not JSON",
		`{"name":"a"} {}`:              "input is not JSON",
		`[{"name":"a"}]`:               "input: /: got array, want object",
		`{"name":"a","` + big + `":1}`: "input: /: additional properties",
	} {
		err := tool.ValidateInput(json.RawMessage(in))
		if err == nil || !strings.Contains(err.Error(), want) || len(err.Error()) > maxMessage+len("input: ")+len("…") {
			t.Errorf("ValidateInput(%.40s): %v, want %q", in, err, want)
		}
	}
	if err := m.Tool("acme.hello.twice").ValidateOutput(json.RawMessage(`[1]`)); err != nil {
		t.Errorf("a tool without an output schema refused JSON output: %v", err)
	}
	if err := m.Tool("acme.hello.twice").ValidateOutput(json.RawMessage(`[1`)); err == nil {
		t.Error("a tool without an output schema took output that is not JSON")
	}
	if err := tool.ValidateOutput(json.RawMessage(`[1]`)); err == nil || !strings.Contains(err.Error(), "output: /: got array, want object") {
		t.Errorf("ValidateOutput([1]) = %v", err)
	}
	if err := (&Tool{ID: "x.y"}).ValidateInput(json.RawMessage(`{}`)); err == nil {
		t.Error("a Tool without a compiled schema took input")
	}
}

var big = strings.Repeat("é", 600)

// TestValidateConcurrently shares one compiled schema across goroutines;
// run with -race.
func TestValidateConcurrently(t *testing.T) {
	t.Parallel()
	tool := parse(t, full(t)).Tool("acme.hello")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				in := fmt.Sprintf(`{"name":"n%d"}`, i)
				if i%2 == 1 {
					in = `{"name":1}`
				}
				if err := tool.ValidateInput(json.RawMessage(in)); (err == nil) != (i%2 == 0) {
					t.Errorf("ValidateInput(%s) = %v", in, err)
				}
			}
		})
	}
	wg.Wait()
}
