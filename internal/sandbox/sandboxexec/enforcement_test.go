package sandboxexec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestEnforcement(t *testing.T) {
	p := proxyPlan
	p.Env = append(slices.Clone(p.Env), "API_TOKEN=hunter2")
	e := p.Enforcement()
	profile := mustProfile(t, p)
	sum := sha256.Sum256([]byte(profile))
	if e["profile"] != profile || e["profile_sha256"] != hex.EncodeToString(sum[:]) {
		t.Error("the record's profile or digest is not the plan's")
	}
	if e["backend"] != Backend || e["default"] != "deny" || e["clearenv"] != true || e["fork"] != false {
		t.Errorf("enforcement = %v", e)
	}
	if got := e["env"].([]string); !slices.Equal(got, []string{"API_TOKEN", "HTTPS_PROXY", "PATH"}) {
		t.Errorf("env = %q", got)
	}
	if got := e["file_write"].([]string); !slices.Equal(got, []string{p.Workspace}) {
		t.Errorf("file_write = %q", got)
	}
	if got := e["network"].(string); !strings.Contains(got, "localhost:3128") {
		t.Errorf("network = %q", got)
	}
	if got := e["exec"].([]string); !slices.Equal(got, []string{p.Program}) {
		t.Errorf("exec = %q", got)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "hunter2") {
		t.Error("the record contains an environment value")
	}
	if nm := e["not_enforced"].([]string); len(nm) == 0 {
		t.Error("the record claims resource limits and a separate user")
	}

	off := buildPlan.Enforcement()
	if got := off["network"].(string); !strings.HasPrefix(got, "none") {
		t.Errorf("offline network = %q", got)
	}
	if got := off["file_write"].([]string); len(got) != 2 {
		t.Errorf("file_write = %q, want workspace and temporary directory", got)
	}
}

func TestEnforcementOfInvalidPlan(t *testing.T) {
	e := Plan{Program: "/bin/ls", Workspace: "ws"}.Enforcement()
	if _, ok := e["profile_error"]; !ok || len(e) != 2 {
		t.Errorf("enforcement of an invalid plan = %v, want backend and profile_error only", e)
	}
}
