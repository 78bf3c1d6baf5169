//go:build unix

package console_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/skill/registry"
)

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// TestSkillLifecycle: a quarantined skill needs two approvals from
// principals other than its installer; the console's requests are the
// registry's SQL calls, and the refusals are the database's.
func TestSkillLifecycle(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	installer := w.newLogin(t, "ops1", "ledger_skill_admin")
	second := w.newLogin(t, "ops2", "ledger_skill_admin")
	third := w.newLogin(t, "ops3", "ledger_skill_admin")
	ctx := context.Background()
	pub := randomBytes(32)
	module := randomBytes(64)
	in := registry.Install{Digest: digestOf(randomBytes(32)), SkillID: "acme.risky", Version: "1.0.0", Publisher: "acme",
		KeyID: digestOf(pub), PublicKey: pub, PayloadDigest: digestOf(module), Signature: randomBytes(64),
		Tools: []string{"acme.risky"}, Size: 100, TOFU: true,
		Files: map[string][]byte{"skill.toml": []byte(`skill_id = "acme.risky"`), "modules/m.wasm": module}}
	if r, err := registry.InstallArtifact(ctx, installer.Pool, in); err != nil || !r.OK {
		t.Fatalf("install: %+v %v", r, err)
	}
	checks := []map[string]any{{"name": "wasi_filesystem_imports", "passed": false, "detail": "path_open"}}
	if r, err := registry.RecordAudit(ctx, installer.Pool, in.SkillID, in.Digest, false, checks, registry.TriggerInstall); err != nil || r.Status != "quarantined" {
		t.Fatalf("audit: %+v %v", r, err)
	}
	waitFor(t, "skill_status to show the quarantine", func() bool {
		var s string
		err := w.db.Pool.QueryRow(ctx, "SELECT status FROM ledger.skill_status WHERE skill_id = $1", in.SkillID).Scan(&s)
		return err == nil && s == "quarantined"
	})
	act := func(l *login, action string) (int, string) {
		c := newClient(t, ts)
		c.mustSignIn(l)
		_, page := c.get("/skills")
		if !strings.Contains(page, `action="/skills/acme.risky"`) || !strings.Contains(page, "wasi_filesystem_imports") {
			t.Fatalf("the skills page of %s:\n%s", l.Name, page)
		}
		return c.post("/skills/acme.risky", url.Values{"action": {action}, "digest": {in.Digest}, "text": {"via the console"}})
	}
	if code, body := act(installer, "approve"); code != http.StatusConflict || !strings.Contains(body, "installed this artifact") {
		t.Fatalf("the installer approves: %d\n%s", code, body)
	}
	if code, body := act(second, "enable"); code != http.StatusConflict || !strings.Contains(body, "needs approvals from two principals") {
		t.Fatalf("enable before approvals: %d\n%s", code, body)
	}
	if code, body := act(second, "approve"); code != http.StatusOK || !strings.Contains(body, "state quarantined") {
		t.Fatalf("the first approval: %d\n%s", code, body)
	}
	if code, body := act(third, "approve"); code != http.StatusOK || !strings.Contains(body, "state approved") {
		t.Fatalf("the second approval: %d\n%s", code, body)
	}
	if code, body := act(installer, "enable"); code != http.StatusOK || !strings.Contains(body, "state enabled") {
		t.Fatalf("enable: %d\n%s", code, body)
	}
	// An auditor reads the skill and the trust store, with no forms.
	audrey := newClient(t, ts)
	audrey.mustSignIn(w.audrey)
	_, page := audrey.get("/skills")
	if !strings.Contains(page, "acme.risky") || strings.Contains(page, `action="/skills/`) || !strings.Contains(page, in.KeyID) {
		t.Fatalf("the auditor's skills page:\n%s", page)
	}
	code, body := audrey.post("/skills/acme.risky", url.Values{"action": {"disable"}})
	if code != http.StatusForbidden || !strings.Contains(body, "may not change skills") {
		t.Fatalf("an auditor disables: %d\n%s", code, body)
	}
}
