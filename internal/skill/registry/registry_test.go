package registry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// fixture is a database with three skill admins (alice installs, bob and
// carol approve), an executor login and a submitter.
type fixture struct {
	db                           *testdb.DB
	alice, bob, carol, exec, sub *testdb.Role
}

func setup(t *testing.T) *fixture {
	t.Helper()
	db := testdb.New(t)
	return &fixture{db: db,
		alice: db.LoginRole(t, "alice", "ledger_skill_admin"),
		bob:   db.LoginRole(t, "bob", "ledger_skill_admin"),
		carol: db.LoginRole(t, "carol", "ledger_skill_admin"),
		exec:  db.LoginRole(t, "", "ledger_executor"),
		sub:   db.LoginRole(t, "svc", "ledger_submitter"),
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// newArtifact is an Install of skill id at version, signed (as far as the
// database can tell) by pub. The database checks no signature: the
// executor does, at every call.
func newArtifact(t *testing.T, id, version string, pub []byte) Install {
	t.Helper()
	module := randomBytes(t, 64)
	files := map[string][]byte{"skill.toml": []byte("skill_id = \"" + id + "\""), "modules/m.wasm": module}
	return Install{Digest: digestOf(randomBytes(t, 32)), SkillID: id, Version: version, Publisher: "acme",
		KeyID: digestOf(pub), PublicKey: pub, PayloadDigest: digestOf(module), Signature: randomBytes(t, 64),
		Tools: []string{id}, Size: 100, Files: files}
}

func must(t *testing.T, r Result, err error, status string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Status != status {
		t.Fatalf("got %+v, want ok and status %s", r, status)
	}
}

func refused(t *testing.T, r Result, err error, reason string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || !strings.Contains(r.Message, reason) {
		t.Fatalf("got %+v, want a refusal naming %q", r, reason)
	}
}

func types(t *testing.T, db ledger.DBTX, id string) []string {
	t.Helper()
	h, err := History(context.Background(), db, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range h {
		out = append(out, e.Type)
	}
	return out
}

var failedChecks = []map[string]any{{"name": "wasi_filesystem_imports", "passed": false, "detail": "path_open"}}
var passedChecks = []map[string]any{{"name": "module_valid", "passed": true}}

func TestTrustOnFirstUseAndKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	pub := randomBytes(t, 32)
	a := newArtifact(t, "acme.hello", "1.0.0", pub)
	if _, err := InstallArtifact(ctx, f.alice.Pool, a); err == nil || !strings.Contains(err.Error(), "not in the trust store") {
		t.Fatalf("install with an unknown key and no TOFU: %v", err)
	}
	a.TOFU = true
	installOK(t, f.alice.Pool, a)
	if got := strings.Join(types(t, f.db.Pool, "acme.hello"), ","); got != "trust.key_added,skill.installed" {
		t.Fatalf("events: %s", got)
	}
	// TOFU pins a publisher's first key only.
	b := newArtifact(t, "acme.other", "1.0.0", randomBytes(t, 32))
	b.TOFU = true
	if _, err := InstallArtifact(ctx, f.alice.Pool, b); err == nil || !strings.Contains(err.Error(), "pinned to other keys") {
		t.Fatalf("TOFU of a second key: %v", err)
	}
	keys, err := Keys(ctx, f.db.Pool)
	if err != nil || len(keys) != 1 || keys[0].Source != "tofu" || keys[0].AddedBy != "alice" {
		t.Fatalf("keys: %+v %v", keys, err)
	}
	// Operators add keys; a key cannot be added twice, nor come back once revoked.
	other := randomBytes(t, 32)
	if err := TrustAdd(ctx, f.bob.Pool, "acme", digestOf(other), other, "second key"); err != nil {
		t.Fatal(err)
	}
	if err := TrustAdd(ctx, f.bob.Pool, "acme", digestOf(other), other, ""); err == nil {
		t.Fatal("a key added twice")
	}
	if n, err := TrustRevoke(ctx, f.bob.Pool, digestOf(other), "leaked"); err != nil || n != 0 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	if err := TrustAdd(ctx, f.bob.Pool, "acme", digestOf(other), other, ""); err == nil {
		t.Fatal("a revoked key came back")
	}
	c := newArtifact(t, "acme.third", "1.0.0", other)
	if _, err := InstallArtifact(ctx, f.alice.Pool, c); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("install with a revoked key: %v", err)
	}
	if v, err := TrustVersion(ctx, f.db.Pool); err != nil || v != 2 {
		t.Fatalf("trust version %d %v", v, err)
	}
	if got := strings.Join(types(t, f.db.Pool, "trust"), ","); got != "trust.key_added,trust.key_revoked" {
		t.Fatalf("skill:trust events: %s", got)
	}
}

// installOK installs in and fails t unless it is installed.
func installOK(t *testing.T, db ledger.DBTX, in Install) {
	t.Helper()
	r, err := InstallArtifact(context.Background(), db, in)
	must(t, r, err, "installed")
}

func TestQuarantineNeedsTwoOtherPrincipals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	a := newArtifact(t, "acme.risky", "1.0.0", randomBytes(t, 32))
	a.TOFU = true
	installOK(t, f.alice.Pool, a)
	r, err := RecordAudit(ctx, f.alice.Pool, a.SkillID, a.Digest, false, failedChecks, TriggerInstall)
	must(t, r, err, "quarantined")

	r, err = Enable(ctx, f.alice.Pool, a.SkillID, "")
	refused(t, r, err, "needs approvals from two principals")
	r, err = Approve(ctx, f.alice.Pool, a.SkillID, a.Digest, "mine")
	refused(t, r, err, "installed this artifact")
	r, err = Approve(ctx, f.bob.Pool, a.SkillID, digestOf([]byte("other bytes")), "")
	refused(t, r, err, "the quarantined artifact is")
	r, err = Approve(ctx, f.bob.Pool, a.SkillID, a.Digest, "reviewed")
	must(t, r, err, "quarantined")
	r, err = Approve(ctx, f.bob.Pool, a.SkillID, a.Digest, "again")
	refused(t, r, err, "already approved")
	r, err = Enable(ctx, f.bob.Pool, a.SkillID, "")
	refused(t, r, err, "(it has 1)")
	r, err = Approve(ctx, f.carol.Pool, a.SkillID, a.Digest, "")
	must(t, r, err, "approved")
	r, err = Enable(ctx, f.alice.Pool, a.SkillID, "")
	must(t, r, err, "enabled")

	s, err := Get(ctx, f.db.Pool, a.SkillID)
	if err != nil || strings.Join(s.Approvals, ",") != "bob,carol" || !s.Cleared {
		t.Fatalf("state: %+v %v", s, err)
	}
	want := "trust.key_added,skill.installed,skill.audited,skill.quarantined,skill.refused,skill.refused,skill.refused," +
		"skill.approved,skill.refused,skill.refused,skill.approved,skill.enabled"
	if got := strings.Join(types(t, f.db.Pool, a.SkillID), ","); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	// Disabling a quarantined skill does not clear it.
	b := newArtifact(t, "acme.risky2", "1.0.0", a.PublicKey)
	installOK(t, f.alice.Pool, b)
	r, err = RecordAudit(ctx, f.alice.Pool, b.SkillID, b.Digest, false, failedChecks, TriggerInstall)
	must(t, r, err, "quarantined")
	r, err = Disable(ctx, f.alice.Pool, b.SkillID, "")
	must(t, r, err, "disabled")
	r, err = Enable(ctx, f.alice.Pool, b.SkillID, "")
	refused(t, r, err, "neither passed an audit nor been approved")
	projected(t, f)
}

func TestLifecycleRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	pub := randomBytes(t, 32)
	v1 := newArtifact(t, "acme.hello", "1.0.0", pub)
	v1.TOFU = true
	installOK(t, f.alice.Pool, v1)
	r, err := Enable(ctx, f.alice.Pool, v1.SkillID, "")
	refused(t, r, err, "cannot be enabled")
	r, err = RecordAudit(ctx, f.alice.Pool, v1.SkillID, v1.Digest, true, passedChecks, TriggerInstall)
	must(t, r, err, "verified")
	if _, err := RecordAudit(ctx, f.alice.Pool, v1.SkillID, v1.Digest, true, failedChecks, TriggerInstall); err == nil {
		t.Fatal("a passing audit with failed checks")
	}
	r, err = Enable(ctx, f.alice.Pool, v1.SkillID, "")
	must(t, r, err, "enabled")
	r, err = Remove(ctx, f.alice.Pool, v1.SkillID, "")
	refused(t, r, err, "disable it first")

	// A new version waits for its own audit; rollback returns to v1, disabled.
	v2 := newArtifact(t, "acme.hello", "1.1.0", pub)
	installOK(t, f.alice.Pool, v2)
	if _, err := InstallArtifact(ctx, f.alice.Pool, v2); err == nil {
		t.Fatal("the current artifact installed twice")
	}
	r, err = Rollback(ctx, f.bob.Pool, v1.SkillID, "v1.1 misbehaves")
	must(t, r, err, "disabled")
	s, err := Get(ctx, f.db.Pool, v1.SkillID)
	if err != nil || s.Version != "1.0.0" || s.ArtifactDigest != v1.Digest || !s.Cleared {
		t.Fatalf("after rollback: %+v %v", s, err)
	}
	r, err = Enable(ctx, f.bob.Pool, v1.SkillID, "")
	must(t, r, err, "enabled")

	// Executors re-audit: they may quarantine, never clear.
	r, err = RecordAudit(ctx, f.exec.Pool, v1.SkillID, v1.Digest, true, passedChecks, TriggerSchedule)
	must(t, r, err, "enabled")
	r, err = RecordAudit(ctx, f.exec.Pool, v1.SkillID, v1.Digest, false, failedChecks, TriggerSchedule)
	must(t, r, err, "quarantined")
	if _, err := RecordAudit(ctx, f.exec.Pool, v1.SkillID, v1.Digest, true, passedChecks, TriggerSchedule); err == nil ||
		!strings.Contains(err.Error(), "may not clear") {
		t.Fatalf("an executor cleared a quarantined skill: %v", err)
	}

	// Revoking the key disables what it signed.
	c := newArtifact(t, "acme.third", "1.0.0", pub)
	installOK(t, f.alice.Pool, c)
	r, err = RecordAudit(ctx, f.alice.Pool, c.SkillID, c.Digest, true, passedChecks, TriggerInstall)
	must(t, r, err, "verified")
	r, err = Enable(ctx, f.alice.Pool, c.SkillID, "")
	must(t, r, err, "enabled")
	if n, err := TrustRevoke(ctx, f.bob.Pool, v1.KeyID, "key leaked"); err != nil || n != 1 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	r, err = Enable(ctx, f.alice.Pool, c.SkillID, "")
	refused(t, r, err, "not trusted")
	r, err = Remove(ctx, f.alice.Pool, c.SkillID, "")
	must(t, r, err, "removed")
	var tools int
	if err := f.db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.skill_tools WHERE skill_id = $1", c.SkillID).Scan(&tools); err != nil || tools != 0 {
		t.Fatalf("a removed skill's tools: %d %v", tools, err)
	}
	projected(t, f)
}

func TestPrivilegesAndImmutability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	a := newArtifact(t, "acme.hello", "1.0.0", randomBytes(t, 32))
	a.TOFU = true
	if _, err := InstallArtifact(ctx, f.sub.Pool, a); err == nil {
		t.Fatal("a submitter installed a skill")
	}
	if _, err := InstallArtifact(ctx, f.exec.Pool, a); err == nil {
		t.Fatal("an executor installed a skill")
	}
	installOK(t, f.alice.Pool, a)
	if _, err := Enable(ctx, f.sub.Pool, a.SkillID, ""); err == nil {
		t.Fatal("a submitter enabled a skill")
	}
	if _, err := Approve(ctx, f.alice.Pool, "acme.nothing", a.Digest, ""); err == nil || !strings.Contains(err.Error(), "no skill") {
		t.Fatalf("approving a skill that does not exist: %v", err)
	}
	bad := newArtifact(t, "acme.evil", "1.0.0", a.PublicKey)
	bad.Tools = []string{"echo"}
	if _, err := InstallArtifact(ctx, f.alice.Pool, bad); err == nil {
		t.Fatal("a skill took the tool id echo")
	}
	for _, q := range []string{
		"UPDATE ledger.skill_files SET content = 'x'",
		"DELETE FROM ledger.skill_artifacts",
		"TRUNCATE ledger.skill_files CASCADE",
	} {
		if _, err := f.db.Pool.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s as the owner: %v", q, err)
		}
	}
	if _, err := f.alice.Pool.Exec(ctx, "UPDATE ledger.skills SET status = 'enabled'"); err == nil {
		t.Fatal("a skill admin wrote ledger.skills directly")
	}
}

// projected applies the skill_status projection to every event, as the
// projection engine does, and fails t unless the read model agrees with
// the lifecycle's state in ledger.skills.
func projected(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	tx, err := f.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL search_path = pg_catalog, ledger, pg_temp`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT ledger.projection_apply('skill_status', '0'::xid8, 0,
		(SELECT max(tx_id) FROM ledger.events), (SELECT max(position) FROM ledger.events))`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `
SELECT s.skill_id, s.status, r.status, r.version = a.version AND r.artifact_digest = s.artifact_digest
       AND r.approvals = s.approvals AND r.stream_version = s.stream_version
FROM ledger.skills s JOIN ledger.skill_artifacts a ON a.digest = s.artifact_digest
LEFT JOIN ledger.skill_status r ON r.skill_id = s.skill_id`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, status string
		model      *string
		same       *bool
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.status, &x.model, &x.same)
	})
	if err != nil || len(got) == 0 {
		t.Fatalf("skills: %v %v", got, err)
	}
	for _, x := range got {
		if x.model == nil || *x.model != x.status || x.same == nil || !*x.same {
			t.Errorf("skill_status of %s: %v (same %v), the lifecycle says %s", x.id, x.model, x.same, x.status)
		}
	}
}
