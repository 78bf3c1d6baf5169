package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.cedar", `@id("ops-echo")
permit (principal == Principal::"ops", action == Action::"tool.execute", resource == Tool::"echo");`)
	bad := write("bad.cedar", `@id("ok")
permit (principal, action == Action::"tool.execute", resource);

@id("typo")
permit (principal, action == Action::"tool.exec", resource);
permit (principal == Principal::"x" action, resource);`)
	r := execute(t, nil, "", "policy", "check", good)
	if r.code != exitOK || !strings.Contains(r.stdout, "ok: 1 policies (ops-echo)") || !strings.Contains(r.stdout, "policy digest: sha256:") {
		t.Errorf("a good file: %+v", r)
	}
	r = execute(t, nil, "", "policy", "check", good, bad)
	if r.code != exitNotOK || r.stderr != "" || !strings.Contains(r.stdout, bad+":6:") || !strings.Contains(r.stdout, "not ok: 1 problem(s)") {
		t.Errorf("a syntax error: %+v", r)
	}
	fixed := write("typo.cedar", `@id("typo")
permit (principal, action == Action::"tool.exec", resource);`)
	r = execute(t, nil, "", "policy", "check", fixed, "--json")
	var res policyCheckResult
	if r.code != exitNotOK || json.Unmarshal([]byte(r.stdout), &res) != nil || res.OK || len(res.Problems) != 1 ||
		res.Problems[0].File != fixed || res.Problems[0].Line != 1 || !strings.Contains(res.Problems[0].Message, `Action::"tool.exec" is never evaluated`) {
		t.Errorf("an unknown action, --json: %+v", r)
	}
	if r := execute(t, nil, "", "policy", "check", filepath.Join(dir, "missing.cedar")); r.code != exitError {
		t.Errorf("a missing file: %+v", r)
	}
	if r := execute(t, nil, "", "policy", "check"); r.code != exitUsage {
		t.Errorf("no file: %+v", r)
	}
}

// TestNewSubmitterFollowsTheREADME is the README's SQL API section as a
// new user follows it against dev (issue 25): a new login's echo is
// denied in plain words; policy explain says why; the policy lines the
// section ends with, added to dev's policy file, are put in force without
// a restart; an edit that does not load is refused with its line and
// the policy in force keeps working.
func TestNewSubmitterFollowsTheREADME(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	billing := d.db.LoginRole(t, "billing", "ledger_submitter")
	asBilling := []string{"DATABASE_URL=" + billing.URL}

	req, r := d.submit(t, asBilling, "echo", `{"text":"invoice 42"}`)
	if r.code != exitNotOK || req["error_kind"] != "policy_denied" ||
		req["error"] != `denied by policy: no policy permits principal "billing" to run tool "echo" (policy.baseline_deny)` {
		t.Fatalf("billing's first echo: %+v", r)
	}
	denied := req["id"].(string)
	r = execute(t, d.client, "", "policy", "explain", denied)
	for _, want := range []string{`principal "billing", tool "echo"`, "deny at stage policy (tool.execute, reason policy.baseline_deny): no policy permits",
		"It is the policy in force now", "demo-and-alice", "policy.cedar:", "does not apply"} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Fatalf("policy explain lacks %q: %+v", want, r)
		}
	}
	// A submitter reads no log: explain says which role it needs.
	if r := execute(t, asBilling, "", "policy", "explain", denied); r.code != exitError || !strings.Contains(r.stderr, "ledger_auditor") {
		t.Errorf("explain as a submitter: %+v", r)
	}

	file := filepath.Join(d.dir, "policy.cedar")
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The README's lines.
	permit := "\n@id(\"billing-echo\")\npermit (principal == Principal::\"billing\", action == Action::\"tool.execute\", resource == Tool::\"echo\");\n"
	if err := os.WriteFile(file, append(text, permit...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := execute(t, nil, "", "policy", "check", file); r.code != exitOK {
		t.Fatalf("policy check of the edit: %+v", r)
	}
	waitOutput(t, d.out, "policy: reloaded")
	if req, r := d.submit(t, asBilling, "echo", `{"text":"invoice 43"}`); req["state"] != "succeeded" {
		t.Fatalf("billing's echo after the edit: %+v", r)
	}
	r = execute(t, d.client, "", "policy", "explain", denied)
	if !strings.Contains(r.stdout, "The policy in force now differs") {
		t.Errorf("explain of the first denial after the edit: %+v", r)
	}

	// An edit that does not parse: refused with its line, and the policy
	// in force stays.
	broken := append(append([]byte{}, text...), (permit + "permit (principal action, resource);\n")...)
	if err := os.WriteFile(file, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(broken), "\n") // the last line
	waitOutput(t, d.out, "refused the edit")
	if !strings.Contains(d.out.String(), "policy.cedar:"+strconv.Itoa(line)+":") {
		t.Errorf("the refusal does not name line %d:\n%s", line, d.out)
	}
	if req, r := d.submit(t, asBilling, "echo", `{"text":"invoice 44"}`); req["state"] != "succeeded" {
		t.Fatalf("billing's echo after a bad edit: %+v", r)
	}
	var published int
	if err := d.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.events WHERE stream = 'policy'`).Scan(&published); err != nil || published != 2 {
		t.Errorf("%d policy.published events, want 2 (the demo policy and the good edit): %v", published, err)
	}
}

// waitOutput waits until a long-lived command has printed want.
func waitOutput(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(patience(t))
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
