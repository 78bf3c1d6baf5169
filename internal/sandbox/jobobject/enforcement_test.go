package jobobject

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestEnforcement(t *testing.T) {
	e := limitedPlan.Enforcement()
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "hunter2") {
		t.Error("the record contains an environment value")
	}
	if got := e["env"].([]string); !slices.Equal(got, []string{"API_TOKEN", "SystemRoot"}) {
		t.Errorf("env = %q", got)
	}
	if e["filesystem"] != "not isolated" || e["network"] != "not isolated" {
		t.Errorf("the record claims isolation: filesystem %v, network %v", e["filesystem"], e["network"])
	}
	for _, key := range []string{"seccomp", "namespaces", "mounts", "uid", "egress_proxy"} {
		if _, ok := e[key]; ok {
			t.Errorf("the record claims %s", key)
		}
	}
	notEnforced := strings.Join(e["not_enforced"].([]string), "\n")
	for _, want := range []string{"filesystem", "network", "token", "kernel-mode"} {
		if !strings.Contains(notEnforced, want) {
			t.Errorf("not_enforced does not mention %s", want)
		}
	}
	if got := e["ui_restrictions"].([]string); len(got) != 8 {
		t.Errorf("ui_restrictions = %q", got)
	}
	if flags := e["limit_flags"].([]string); slices.ContainsFunc(flags, func(f string) bool { return strings.Contains(f, "BREAKAWAY") }) {
		t.Errorf("limit_flags = %q", flags)
	}

	bare := Plan{Program: `C:\t.exe`, Dir: `C:\ws`}.Enforcement()
	for _, key := range []string{"active_process_limit", "job_memory_bytes", "process_memory_bytes", "process_user_time_ms", "job_user_time_ms", "cpu_rate", "timeout_ms"} {
		if bare[key] != "none" {
			t.Errorf("%s = %v without limits, want none", key, bare[key])
		}
	}
}

func TestEnforcementOfInvalidPlan(t *testing.T) {
	e := Plan{Program: `C:\run.bat`, Dir: `C:\ws`}.Enforcement()
	if _, ok := e["plan_error"]; !ok || len(e) != 2 {
		t.Errorf("enforcement of an invalid plan = %v, want backend and plan_error only", e)
	}
}
