package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/skill/audit"
	"github.com/execledger/execledger/internal/skill/gate"
	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/internal/skill/vet"
	"github.com/execledger/execledger/internal/testdb"
)

// skillBench is a database with three skill admins (alice installs, bob
// and carol approve), a publisher key and serve's environment.
type skillBench struct {
	db                *testdb.DB
	alice, bob, carol []string // each admin's client environment
	serve             []string
	key, dir          string
}

func newSkillBench(t *testing.T, extra ...string) *skillBench {
	t.Helper()
	db, environ := processEnv(t, "C", append([]string{"EXECLEDGER_PROCESS_RUN_ENABLED=false", "EXECLEDGER_WASM_ENABLED=true"}, extra...)...)
	dir := t.TempDir()
	pol := filepath.Join(dir, "skills.cedar")
	text := `permit (principal == Principal::"ops", action in [Action::"tool.execute", Action::"skill.execute"], resource);`
	if err := os.WriteFile(pol, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "publisher.key")
	if _, err := attest.GenerateKeyFiles(key, key+".pub"); err != nil {
		t.Fatal(err)
	}
	admin := func(name string) []string {
		return append([]string{"DATABASE_URL=" + db.LoginRole(t, name, "ledger_skill_admin").URL}, extra...)
	}
	return &skillBench{db: db, alice: admin("alice"), bob: admin("bob"), carol: admin("carol"), key: key, dir: dir,
		serve: append(environ, "EXECLEDGER_POLICY_FILES="+pol, "EXECLEDGER_WASM_CACHE_DIR="+wasmCacheDir(t))}
}

// run runs the command line and fails t unless it exits with code. It
// waits as long as the test may run: skill install and audit compile the
// skill's modules, minutes for a Go skill under the race detector on a
// loaded machine.
func (b *skillBench) run(t *testing.T, environ []string, code int, args ...string) result {
	t.Helper()
	r := executeWithin(t, patience(t), environ, "", args...)
	if r.code != code {
		t.Fatalf("execledger %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// newSkill writes skill id in lang and packages it; build runs between.
func (b *skillBench) newSkill(t *testing.T, id, lang string, edit func(dir string)) string {
	t.Helper()
	dir := filepath.Join(b.dir, id)
	b.run(t, nil, exitOK, "skill", "new", id, "--lang", lang, "--dir", dir)
	if edit != nil {
		edit(dir)
	}
	out := filepath.Join(b.dir, id+".skill")
	b.run(t, nil, exitOK, "skill", "package", dir, "--key", b.key, "--out", out)
	return out
}

// call submits tool with input as ops and waits for it to be final, as
// long as the test may run: a skill's first call builds it (audit and
// compile of a 2 MB module for a Go skill), which under the race
// detector, beside the other packages' tests on two loaded cores, has
// taken minutes.
func (b *skillBench) call(t *testing.T, tool, input string) map[string]any {
	t.Helper()
	wait := patience(t)
	r := executeWithin(t, wait+30*time.Second, []string{"DATABASE_URL=" + b.db.URL}, "", "submit", tool, input,
		"--wait", "--timeout", wait.String(), "--json")
	var req map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &req); err != nil {
		t.Fatalf("submit %s: %+v", tool, r)
	}
	return req
}

func stateOf(req map[string]any) string {
	s, _ := req["state"].(string)
	k, _ := req["error_kind"].(string)
	return s + "/" + k
}

// TestSkillLifecycleEndToEnd: a WAT skill made by skill new is packaged,
// its publisher key trusted, installed (verified by its audit), enabled
// and run through ledger.submit; its input schema refuses bad input;
// disabling stops the next call and enabling restores it; a byte changed
// in the stored module after install is refused at the next call.
func TestSkillLifecycleEndToEnd(t *testing.T) {
	t.Parallel()
	b := newSkillBench(t)
	art := b.newSkill(t, "acme.hello", "wat", func(dir string) {
		p := filepath.Join(dir, "skill.toml")
		raw, _ := os.ReadFile(p)
		raw = []byte(strings.Replace(string(raw), `input_schema = { type = "object" }`,
			`input_schema = { type = "object", required = ["x"], properties = { x = { type = "integer" } } }`, 1))
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if r := b.run(t, b.alice, exitError, "skill", "install", art); !strings.Contains(r.stderr, "not in the trust store") {
		t.Fatalf("install with an untrusted key: %+v", r)
	}
	b.run(t, b.alice, exitOK, "skill", "trust", "add", "acme", b.key+".pub")
	r := b.run(t, b.alice, exitOK, "skill", "install", art, "--json")
	var rep installReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Status != "verified" || len(rep.FailedChecks) != 0 {
		t.Fatalf("install: %+v %v\n%s", rep, err, r.stdout)
	}
	b.run(t, b.alice, exitOK, "skill", "enable", "acme.hello")

	stop, out := startCommand(t, b.serve, "serve")
	req := b.call(t, "acme.hello", `{"x": 7}`)
	if stateOf(req) != "succeeded/" || req["tier"] != "A" {
		t.Fatalf("acme.hello: %v\n%s", req, out)
	}
	if o, _ := json.Marshal(req["output"]); string(o) != `{"echo":{"x":7}}` {
		t.Errorf("output %s", o)
	}
	checkSkillAttestation(t, b.db, req["id"], rep)
	// verify --replay finds the installed skill's module in the ledger's
	// skill storage by the digest the attestation recorded: no
	// [[wasm.modules]] entry registers acme.hello.
	if r := execute(t, b.serve, "", "verify", "--replay", req["id"].(string)); r.code != exitOK ||
		!strings.Contains(r.stdout, "tool:         acme.hello (tier A)") || !strings.Contains(r.stdout, "fuel matches") || !strings.HasSuffix(r.stdout, "ok\n") {
		t.Errorf("verify --replay of an installed skill's call: %+v", r)
	}
	if req := b.call(t, "acme.hello", `{"x": "seven"}`); stateOf(req) != "denied/invalid_input" ||
		!strings.Contains(req["error"].(string), "input schema") {
		t.Errorf("input against the schema: %v", req)
	}

	b.run(t, b.bob, exitOK, "skill", "disable", "acme.hello", "--reason", "maintenance")
	if req := b.call(t, "acme.hello", `{"x": 1}`); stateOf(req) != "denied/skill_not_active" ||
		!strings.Contains(req["error"].(string), "is disabled") {
		t.Errorf("a disabled skill ran: %v", req)
	}
	b.run(t, b.bob, exitOK, "skill", "enable", "acme.hello")
	if req := b.call(t, "acme.hello", `{"x": 2}`); stateOf(req) != "succeeded/" {
		t.Errorf("re-enabled: %v", req)
	}

	// skill audit says how the key is trusted and how long it took.
	r = b.run(t, b.alice, exitOK, "skill", "audit", "acme.hello")
	if !strings.Contains(r.stdout, "skill acme.hello 0.1.0: enabled") || !strings.Contains(r.stdout, "(operator)") ||
		strings.Contains(r.stdout, "(-)") || strings.Contains(r.stdout, "total 0.0 ms") {
		t.Errorf("skill audit: %s", r.stdout)
	}

	tamper(t, b.db, `UPDATE ledger.skill_files SET content = overlay(content placing '\xff'::bytea from 30 for 1)
		WHERE path = 'modules/hello.wasm'`)
	if req := b.call(t, "acme.hello", `{"x": 3}`); stateOf(req) != "denied/skill_not_active" ||
		!strings.Contains(req["error"].(string), "not the installed payload digest") {
		t.Errorf("a changed byte in the stored module: %v", req)
	}
	// The first call's replay finds the stored module changed.
	if r := execute(t, b.serve, "", "verify", "--replay", req["id"].(string)); r.code != exitError ||
		!strings.Contains(r.stderr, "cannot replay: module digest mismatch: installed skill acme.hello stores modules/hello.wasm as sha256:") {
		t.Errorf("verify --replay after the stored module changed: %+v", r)
	}
	// Audited again, it is quarantined; skill show prints the failed
	// check as a line, not as JSON.
	b.run(t, b.alice, exitOK, "skill", "audit", "acme.hello")
	r = b.run(t, b.alice, exitOK, "skill", "show", "acme.hello")
	if !strings.Contains(r.stdout, "failed:     1 checks\n  artifact_integrity: ") || strings.Contains(r.stdout, `[{"`) {
		t.Errorf("skill show of a quarantined skill:\n%s", r.stdout)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d\n%s", code, out)
	}
}

// tamper runs q as the superuser with the skill tables' append-only
// triggers off, as an attacker holding the database would.
func tamper(t *testing.T, db *testdb.DB, q string) {
	t.Helper()
	ctx := context.Background()
	for _, s := range []string{
		"ALTER TABLE ledger.skill_files DISABLE TRIGGER skill_files_append_only", q,
		"ALTER TABLE ledger.skill_files ENABLE ALWAYS TRIGGER skill_files_append_only",
	} {
		if _, err := db.Pool.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// checkSkillAttestation: the attestation of a skill's call names the
// skill, its version, the artifact and the publisher key.
func checkSkillAttestation(t *testing.T, db *testdb.DB, id any, rep installReport) {
	t.Helper()
	var env string
	if err := db.Pool.QueryRow(context.Background(), `SELECT payload->>'envelope' FROM ledger.events
		WHERE stream = 'request:' || $1 AND type IN ('attestation.signed', 'execution.completed')`, id).Scan(&env); err != nil {
		t.Fatal(err)
	}
	var e struct{ Payload []byte }
	if err := json.Unmarshal([]byte(env), &e); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Predicate attest.Execution `json:"predicate"`
	}
	if err := json.Unmarshal(e.Payload, &st); err != nil {
		t.Fatal(err)
	}
	s := st.Predicate.Skill
	if s == nil || s.ID != rep.SkillID || s.Version != rep.Version || s.ArtifactDigest != rep.ArtifactDigest ||
		s.PublisherKey != rep.KeyID || s.PayloadDigest != rep.PayloadDigest {
		t.Errorf("the attestation's skill: %+v, want %+v", s, rep)
	}
}

// TestSkillQuarantineAndTwoPersonRule: a Go skill made by skill new,
// asking for an http host the policy does not grant, is installed with
// trust on first use, quarantined by its audit, refused every shortcut
// out of quarantine, approved by two principals other than its
// installer, enabled and run (granted nothing of what the policy does not
// allow); revoking its publisher's key stops the next call.
func TestSkillQuarantineAndTwoPersonRule(t *testing.T) {
	t.Parallel()
	b := newSkillBench(t, "EXECLEDGER_SKILLS_TRUST_ON_FIRST_USE=true")
	art := b.newSkill(t, "acme.greet", "go", func(dir string) {
		goTool, err := exec.LookPath("go")
		if err != nil {
			t.Fatalf("go is needed: %v", err)
		}
		p := filepath.Join(dir, "skill.toml")
		raw, _ := os.ReadFile(p)
		raw = []byte(strings.Replace(string(raw), "http_egress_allowlist = []", `http_egress_allowlist = ["api.example.com"]`, 1))
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(goTool, "build", "-o", "modules/greet.wasm", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the Go skill: %v\n%s", err, out)
		}
		precompile(t, filepath.Join(dir, "modules", "greet.wasm")) // for serve's first call
	})
	// The installer audits in the interpreter: what this test checks does
	// not depend on the engine, and wazero's compiler in this race-built
	// binary takes minutes over a Go module on a loaded machine
	// (TestSkillLifecycleEndToEnd installs with the compiler).
	installer := append(slices.Clone(b.alice), "EXECLEDGER_WASM_ENGINE=interpreter")
	r := b.run(t, installer, exitOK, "skill", "install", art)
	if !strings.Contains(r.stdout, "quarantined") || !strings.Contains(r.stdout, "capabilities_within_max") ||
		!strings.Contains(r.stdout, "http api.example.com") ||
		!strings.Contains(r.stdout, "(tofu)") {
		t.Fatalf("install: %s", r.stdout)
	}
	b.run(t, b.alice, exitNotOK, "skill", "enable", "acme.greet")
	if r := b.run(t, b.alice, exitNotOK, "skill", "approve", "acme.greet"); !strings.Contains(r.stderr, "installed this artifact") {
		t.Errorf("the installer approving: %+v", r)
	}
	b.run(t, b.bob, exitOK, "skill", "approve", "acme.greet", "--note", "reviewed the source")
	if r := b.run(t, b.bob, exitNotOK, "skill", "approve", "acme.greet"); !strings.Contains(r.stderr, "already approved") {
		t.Errorf("the same principal twice: %+v", r)
	}
	b.run(t, b.bob, exitNotOK, "skill", "enable", "acme.greet")
	b.run(t, b.carol, exitNotOK, "skill", "approve", "acme.greet", "--digest", "sha256:"+strings.Repeat("0", 64))
	b.run(t, b.carol, exitOK, "skill", "approve", "acme.greet")
	b.run(t, b.carol, exitOK, "skill", "enable", "acme.greet")

	stop, out := startCommand(t, b.serve, "serve")
	req := b.call(t, "acme.greet", `{"name": "ada"}`)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "skill built") {
			t.Log(line) // how long the first call's build took
		}
	}
	if o, _ := json.Marshal(req["output"]); stateOf(req) != "succeeded/" || string(o) != `{"greeting":"hello, ada"}` {
		t.Fatalf("acme.greet: %v\n%s", req, out)
	}
	if req := b.call(t, "acme.greet", `{"nom": "ada"}`); stateOf(req) != "denied/invalid_input" {
		t.Errorf("input against the schema: %v", req)
	}
	var keyID string
	if err := b.db.Pool.QueryRow(context.Background(), "SELECT key_id FROM ledger.skill_trust_keys").Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	if r := b.run(t, b.bob, exitOK, "skill", "trust", "revoke", keyID, "--reason", "leaked"); !strings.Contains(r.stdout, "1 skill(s)") {
		t.Errorf("revoke: %s", r.stdout)
	}
	if req := b.call(t, "acme.greet", `{"name": "ada"}`); stateOf(req) != "denied/skill_not_active" {
		t.Errorf("a skill whose key was revoked ran: %v", req)
	}
	r = b.run(t, b.alice, exitOK, "skill", "show", "acme.greet")
	for _, s := range []string{"status:     disabled", "skill.refused", "skill.approved", "trust.key_added"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("skill show lacks %q:\n%s", s, r.stdout)
		}
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d\n%s", code, out)
	}
}

// TestSkillSocketImportsQuarantined: a skill whose module imports WASI's
// sock_accept is quarantined at install and at every audit, the failed
// check naming the import and saying that no capability grants raw
// sockets, though the skill asks for an http host the policy grants.
func TestSkillSocketImportsQuarantined(t *testing.T) {
	t.Parallel()
	b := newSkillBench(t, "EXECLEDGER_SKILLS_TRUST_ON_FIRST_USE=true", "EXECLEDGER_WASM_POLICY_HTTP_HOSTS=api.example.com")
	art := b.newSkill(t, "acme.listen", "wat", func(dir string) {
		editManifest(t, dir, "http_egress_allowlist = []", `http_egress_allowlist = ["api.example.com"]`)
		src := t.TempDir()
		watModule(t, src, "listen", listenWAT)
		wasm, err := os.ReadFile(filepath.Join(src, "listen.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "modules", "listen.wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	check := func(what string, r result) {
		t.Helper()
		var rep installReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Status != "quarantined" || len(rep.FailedChecks) != 1 ||
			rep.FailedChecks[0].Name != "imports_known" ||
			!strings.Contains(rep.FailedChecks[0].Detail, "function wasi_snapshot_preview1.sock_accept") ||
			!strings.Contains(rep.FailedChecks[0].Detail, "no capability grants raw sockets") {
			t.Fatalf("%s: %+v (%v)\n%s", what, rep, err, r.stdout)
		}
	}
	check("install", execute(t, b.alice, "", "skill", "install", art, "--json"))
	check("skill audit", execute(t, b.bob, "", "skill", "audit", "acme.listen", "--json"))
	b.run(t, b.alice, exitNotOK, "skill", "enable", "acme.listen")
}

// editManifest replaces old with new in dir's skill.toml.
func editManifest(t *testing.T, dir, old, new string) {
	t.Helper()
	p := filepath.Join(dir, "skill.toml")
	raw, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(raw), old) {
		t.Fatalf("skill.toml lacks %q (%v)", old, err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(raw), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSkillInstallRefusesBadArtifacts: an artifact signed by an untrusted
// or revoked key, one with a changed byte, an unsigned one and a manifest
// with an unknown key are each refused with a clear error, and nothing is
// installed.
func TestSkillInstallRefusesBadArtifacts(t *testing.T) {
	t.Parallel()
	b := newSkillBench(t, "EXECLEDGER_SKILLS_TRUST_ON_FIRST_USE=true")
	art := b.newSkill(t, "acme.hello", "wat", nil)
	other := filepath.Join(b.dir, "other.key")
	if _, err := attest.GenerateKeyFiles(other, other+".pub"); err != nil {
		t.Fatal(err)
	}
	b.run(t, b.alice, exitOK, "skill", "trust", "add", "acme", other+".pub")
	if r := b.run(t, b.alice, exitError, "skill", "install", art); !strings.Contains(r.stderr, "whose trusted keys are others") {
		t.Errorf("a key other than the publisher's trusted one: %s", r.stderr)
	}
	// Signed by the trusted key but changed afterwards, byte by byte.
	signed := filepath.Join(b.dir, "signed.skill")
	b.run(t, nil, exitOK, "skill", "package", filepath.Join(b.dir, "acme.hello"), "--key", other, "--out", signed)
	data, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{40, len(data) / 3, len(data) / 2, len(data) - 30} {
		c := append([]byte(nil), data...)
		c[at] ^= 0x20
		p := filepath.Join(b.dir, "changed.skill")
		if err := os.WriteFile(p, c, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := execute(t, b.alice, "", "skill", "install", p); r.code != exitError {
			t.Errorf("byte %d changed: %+v", at, r)
		}
	}
	// Unsigned: the archive without signature.json.
	unsigned := rezip(t, data, func(name string) bool { return name != "signature.json" })
	p := filepath.Join(b.dir, "unsigned.skill")
	if err := os.WriteFile(p, unsigned, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := b.run(t, b.alice, exitError, "skill", "install", p); !strings.Contains(r.stderr, "no signature.json") {
		t.Errorf("unsigned: %s", r.stderr)
	}
	// Revoked.
	var keyID string
	if err := b.db.Pool.QueryRow(context.Background(), "SELECT key_id FROM ledger.skill_trust_keys").Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	b.run(t, b.bob, exitOK, "skill", "trust", "revoke", keyID)
	if r := b.run(t, b.alice, exitError, "skill", "install", signed); !strings.Contains(r.stderr, "revoked") {
		t.Errorf("a revoked key: %s", r.stderr)
	}
	// A manifest with an unknown key never becomes an artifact.
	editManifest(t, filepath.Join(b.dir, "acme.hello"), `publisher = "acme"`, "publisher = \"acme\"\nauthor = \"me\"")
	if r := b.run(t, nil, exitError, "skill", "package", filepath.Join(b.dir, "acme.hello"), "--key", other, "--out",
		filepath.Join(b.dir, "x.skill")); !strings.Contains(r.stderr, "skill.toml:7: author: unknown key") {
		t.Errorf("unknown key: %s", r.stderr)
	}
	var n int
	if err := b.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.skills").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d skills installed (%v)", n, err)
	}
}

// rezip rewrites an archive keeping the entries keep accepts.
func rezip(t *testing.T, data []byte, keep func(string) bool) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if !keep(f.Name) {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSkillRollbackAndReaudit: a new version replaces the enabled one
// until rollback returns to it (disabled, then enabled again without new
// approvals); a scheduled re-audit under a policy that no longer grants
// what the skill asks for quarantines it, and its calls stop.
func TestSkillRollbackAndReaudit(t *testing.T) {
	t.Parallel()
	b := newSkillBench(t, "EXECLEDGER_SKILLS_TRUST_ON_FIRST_USE=true", "EXECLEDGER_WASM_POLICY_STORAGE_PREFIXES=acme/")
	dir := filepath.Join(b.dir, "acme.hello")
	v1 := b.newSkill(t, "acme.hello", "wat", func(dir string) {
		editManifest(t, dir, "storage_prefixes = []", `storage_prefixes = ["acme/hello/"]`)
	})
	b.run(t, b.alice, exitOK, "skill", "install", v1)
	b.run(t, b.alice, exitOK, "skill", "enable", "acme.hello")
	editManifest(t, dir, `version = "0.1.0"`, `version = "0.2.0"`)
	v2 := filepath.Join(b.dir, "v2.skill")
	b.run(t, nil, exitOK, "skill", "package", dir, "--key", b.key, "--out", v2)
	b.run(t, b.alice, exitOK, "skill", "install", v2)
	b.run(t, b.bob, exitOK, "skill", "rollback", "acme.hello", "--reason", "0.2.0 misbehaves")
	if r := b.run(t, b.bob, exitOK, "skill", "list"); !strings.Contains(r.stdout, "0.1.0") || !strings.Contains(r.stdout, "disabled") {
		t.Fatalf("after rollback: %s", r.stdout)
	}
	b.run(t, b.bob, exitOK, "skill", "enable", "acme.hello")

	stop, out := startCommand(t, b.serve, "serve")
	if req := b.call(t, "acme.hello", `{"x": 1}`); stateOf(req) != "succeeded/" {
		t.Fatalf("0.1.0 after rollback: %v\n%s", req, out)
	}
	// The policy narrows: the executor's re-audit quarantines the skill.
	pool := b.db.LoginRole(t, "", "ledger_executor").Pool
	opts := vet.Options{Max: audit.Max{}}
	if n, err := gate.Reaudit(context.Background(), pool, opts, registry.TriggerSchedule); err != nil || n != 1 {
		t.Fatalf("re-audit: %d %v", n, err)
	}
	if req := b.call(t, "acme.hello", `{"x": 1}`); stateOf(req) != "denied/skill_not_active" {
		t.Errorf("a quarantined skill ran: %v", req)
	}
	r := b.run(t, b.alice, exitOK, "skill", "show", "acme.hello", "--json")
	var show skillShow
	if err := json.Unmarshal([]byte(r.stdout), &show); err != nil || show.Status != "quarantined" ||
		!strings.Contains(string(show.FailedChecks), "capabilities_within_max") {
		t.Errorf("after the re-audit: %+v %v", show.Skill, err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d\n%s", code, out)
	}
}

// TestSkillApprovalAndQuotas: a tool whose manifest says
// requires_approval waits for ledger.approve like a sensitive tool; a
// manifest's fuel budget below the configuration's is the one a call
// gets.
func TestSkillApprovalAndQuotas(t *testing.T) {
	t.Parallel()
	b := newSkillBench(t)
	b.run(t, b.alice, exitOK, "skill", "trust", "add", "acme", b.key+".pub")
	for id, edit := range map[string][2]string{
		"acme.careful": {"requires_approval = false", "requires_approval = true"},
		"acme.tight":   {"fuel_budget = 10000000", "fuel_budget = 50"},
	} {
		art := b.newSkill(t, id, "wat", func(dir string) { editManifest(t, dir, edit[0], edit[1]) })
		b.run(t, b.alice, exitOK, "skill", "install", art)
		b.run(t, b.alice, exitOK, "skill", "enable", id)
	}
	stop, out := startCommand(t, b.serve, "serve")
	ctx := context.Background()
	var id string
	if err := b.db.Pool.QueryRow(ctx, `SELECT ledger.submit('acme.careful', '{"x": 1}')`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s\n%s", what, out)
			}
		}
	}
	state := func() string {
		var s string
		if err := b.db.Pool.QueryRow(ctx, "SELECT state FROM ledger.requests WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	waitFor("acme.careful never awaited approval", func() bool { return state() == "awaiting_approval" })
	approver := b.db.LoginRole(t, "dave", "ledger_approver")
	if _, err := approver.Pool.Exec(ctx, "SELECT ledger.approve($1, 'looked at it')", id); err != nil {
		t.Fatal(err)
	}
	waitFor("acme.careful never succeeded after its approval", func() bool { return state() == "succeeded" })

	req := b.call(t, "acme.tight", `{"x": 1}`)
	if stateOf(req) != "failed/quota_exceeded" {
		t.Errorf("a call over its manifest's fuel budget: %v", req)
	}
	var fuel int64
	if err := b.db.Pool.QueryRow(ctx, `SELECT (payload -> 'resources' ->> 'fuel_limit')::bigint FROM ledger.events
		WHERE stream = 'request:' || $1 AND type = 'execution.completed'`, req["id"]).Scan(&fuel); err != nil || fuel != 50 {
		t.Errorf("fuel limit %d (%v), want the manifest's 50", fuel, err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d\n%s", code, out)
	}
}

// TestSkillNewNextSteps: skill new's steps go from the new directory to
// a call, trusting the publisher key on the way, and name this binary as
// it can be run, as does the Makefile (bin/execledger is on no PATH).
func TestSkillNewNextSteps(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"wat", "go"} {
		dir := filepath.Join(t.TempDir(), "hello")
		r := execute(t, []string{"PATH=/usr/bin:/bin"}, "", "skill", "new", "acme.hello", "--lang", lang, "--dir", dir)
		if r.code != exitOK {
			t.Fatalf("skill new: %+v", r)
		}
		want := []string{
			self + " keygen --out publisher.key",
			self + " skill package " + dir + " --key publisher.key --out acme.hello.skill",
			self + " skill trust add acme publisher.key.pub",
			self + " skill install acme.hello.skill",
			self + " skill enable acme.hello",
			self + ` submit acme.hello '{"x":1}' --wait`,
		}
		at := 0
		for _, w := range want {
			i := strings.Index(r.stdout[at:], w)
			if i < 0 {
				t.Fatalf("%s: skill new's steps lack %q, in order:\n%s", lang, w, r.stdout)
			}
			at += i
		}
		mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
		if err != nil || !strings.Contains(string(mk), "EXECLEDGER ?= "+self+"\n") {
			t.Fatalf("%s Makefile: %v\n%s", lang, err, mk)
		}
		// make runs that binary, or the one given.
		for _, tc := range []struct {
			args []string
			run  string
		}{
			{nil, self},
			{[]string{"EXECLEDGER=/opt/el/execledger"}, "/opt/el/execledger"},
		} {
			cmd := exec.Command("make", append([]string{"-n", "-W", "modules/hello.wasm", "package"}, tc.args...)...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.run+" skill package . --key publisher.key --out acme.hello-0.1.0.skill") {
				t.Errorf("%s: make -n package %v: %v\n%s", lang, tc.args, err, out)
			}
		}
	}
}
