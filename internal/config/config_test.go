package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "execledger.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsAreValid(t *testing.T) {
	cfg, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Serve.Listen != "127.0.0.1:9464" || cfg.Database.MaxConns != 16 || cfg.Log.Level != "info" {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestFileThenEnvironment(t *testing.T) {
	p := writeFile(t, `
[database]
url = "postgres://file@127.0.0.1/x"
connect_timeout = "3s"

[serve]
listen = "127.0.0.1:1000"
label = "from-file"
`)
	cfg, err := Load(p, []string{
		"EXECLEDGER_SERVE_LABEL=from-env",
		"EXECLEDGER_DATABASE_MAX_CONNS=4",
		"EXECLEDGER_CONFIG=ignored",
		"EXECLEDGER_PROCESS_RUN_EGRESS_PORTS=443, 8443",
		"PATH=/bin",
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cfg.Process.EgressPorts) != "[443 8443]" {
		t.Fatalf("egress_ports = %v", cfg.Process.EgressPorts)
	}
	if cfg.Serve.Label != "from-env" || cfg.Serve.Listen != "127.0.0.1:1000" || cfg.Database.MaxConns != 4 ||
		cfg.Database.ConnectTimeout.Duration != 3*time.Second || cfg.Database.URL != "postgres://file@127.0.0.1/x" {
		t.Fatalf("cfg = %+v", cfg)
	}
}

func TestDatabaseURLPrecedence(t *testing.T) {
	cfg, err := Load("", []string{"DATABASE_URL=postgres://a@h/db"})
	if err != nil || cfg.Database.URL != "postgres://a@h/db" {
		t.Fatalf("DATABASE_URL: %+v, %v", cfg.Database, err)
	}
	cfg, err = Load("", []string{"DATABASE_URL=postgres://a@h/db", "EXECLEDGER_DATABASE_URL=postgres://b@h/db"})
	if err != nil || cfg.Database.URL != "postgres://b@h/db" {
		t.Fatalf("EXECLEDGER_DATABASE_URL: %+v, %v", cfg.Database, err)
	}
}

func TestReplicaURL(t *testing.T) {
	const multi = "postgres://auditor@db1:5432,db2:5432/ledger?target_session_attrs=prefer-standby"
	cfg, err := Load("", []string{"DATABASE_URL=postgres://a@h/db", "EXECLEDGER_DATABASE_REPLICA_URL=" + multi})
	if err != nil || cfg.Database.ReplicaURL != multi || cfg.Database.URL != "postgres://a@h/db" {
		t.Fatalf("EXECLEDGER_DATABASE_REPLICA_URL: %+v, %v", cfg.Database, err)
	}
	cfg, err = Load(writeFile(t, "[database]\nreplica_url = \"postgres://r@standby/db\"\n"), nil)
	if err != nil || cfg.Database.ReplicaURL != "postgres://r@standby/db" {
		t.Fatalf("replica_url in a file: %+v, %v", cfg.Database, err)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	for name, tc := range map[string]struct {
		file string
		env  []string
		want string
	}{
		"unknown file key":     {file: "[serve]\nlisten = \"127.0.0.1:1\"\nlsiten = \"x\"\n", want: "serve.lsiten"},
		"unknown variable":     {env: []string{"EXECLEDGER_SERVE_LSITEN=x"}, want: "EXECLEDGER_SERVE_LSITEN: no such configuration key"},
		"bad integer":          {env: []string{"EXECLEDGER_DATABASE_MAX_CONNS=many"}, want: "EXECLEDGER_DATABASE_MAX_CONNS"},
		"bad duration":         {env: []string{"EXECLEDGER_DATABASE_CONNECT_TIMEOUT=soon"}, want: "EXECLEDGER_DATABASE_CONNECT_TIMEOUT"},
		"bad level":            {env: []string{"EXECLEDGER_LOG_LEVEL=loud"}, want: "log.level"},
		"bad url":              {env: []string{"DATABASE_URL=mysql://x"}, want: "database.url"},
		"bad replica url":      {env: []string{"EXECLEDGER_DATABASE_REPLICA_URL=http://x"}, want: "database.replica_url"},
		"bad listen":           {env: []string{"EXECLEDGER_SERVE_LISTEN=nope"}, want: "serve.listen"},
		"zero pool":            {env: []string{"EXECLEDGER_DATABASE_MAX_CONNS=0"}, want: "database.max_conns"},
		"zero top k":           {env: []string{"EXECLEDGER_SERVE_QUOTA_METRICS_TOP_K=0"}, want: "serve.quota_metrics_top_k"},
		"bad port list":        {env: []string{"EXECLEDGER_PROCESS_RUN_EGRESS_PORTS=80,http"}, want: "EXECLEDGER_PROCESS_RUN_EGRESS_PORTS"},
		"long lifetime":        {env: []string{"EXECLEDGER_PROCESS_RUN_MAX_BACKGROUND_LIFETIME=31m"}, want: "max_background_lifetime"},
		"bad cgroups":          {env: []string{"EXECLEDGER_PROCESS_RUN_CGROUPS=maybe"}, want: "process_run.cgroups"},
		"bad allowlist":        {env: []string{"EXECLEDGER_PROCESS_RUN_EGRESS_ALLOWLIST=*.com"}, want: "process_run.egress_allowlist"},
		"low uid base":         {env: []string{"EXECLEDGER_PROCESS_RUN_UID_BASE=0"}, want: "uid_base"},
		"console off loopback": {env: []string{"EXECLEDGER_CONSOLE_LISTEN=0.0.0.0:9470"}, want: "passwords and session cookies need TLS"},
		"console login user":   {env: []string{"EXECLEDGER_CONSOLE_LOGIN_URL=postgres://u:p@db/x"}, want: "console.login_url"},
		"console idle":         {env: []string{"EXECLEDGER_CONSOLE_IDLE_TIMEOUT=1s"}, want: "console.idle_timeout"},
		"bad tier":             {env: []string{"EXECLEDGER_PROCESS_RUN_TIER=D"}, want: "process_run.tier: \"D\" is not B, C or auto"},
		"negative reload":      {env: []string{"EXECLEDGER_POLICY_RELOAD_INTERVAL=-1s"}, want: "policy.reload_interval"},
		"malformed toml":       {file: "[serve\n", want: "execledger.toml"},
		"wrong type in file":   {file: "[database]\nmax_conns = \"x\"\n", want: "max_conns"},
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

func TestMissingFileIsAnError(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.toml"), nil); err == nil {
		t.Fatal("a missing file was accepted")
	}
}

// TestExampleFileIsCurrent loads the example in testdata: it must stay
// valid and list the defaults.
func TestExampleFileIsCurrent(t *testing.T) {
	cfg, err := Load("../../testdata/execledger.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	if !reflect.DeepEqual(cfg, def) {
		t.Fatalf("testdata/execledger.toml differs from the defaults:\n file: %+v\n default: %+v", cfg, def)
	}
}

// TestWorkspaceTTL: the workspace TTL is on by default, may be 0 (off),
// and is otherwise refused unless longer than max_background_lifetime,
// with an error naming both keys.
func TestWorkspaceTTL(t *testing.T) {
	def := Default().Process
	if def.WorkspaceTTL.Duration != 2*time.Hour || def.WorkspaceSweepInterval.Duration != 5*time.Minute {
		t.Fatalf("defaults: workspace_ttl %s, workspace_sweep_interval %s", def.WorkspaceTTL, def.WorkspaceSweepInterval)
	}
	for name, tc := range map[string]struct {
		env  []string
		want string // "" accepted
	}{
		"off":                    {env: []string{"EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL=0"}},
		"just past the lifetime": {env: []string{"EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL=30m1s"}},
		"short lifetime, short ttl": {env: []string{"EXECLEDGER_PROCESS_RUN_MAX_BACKGROUND_LIFETIME=1m",
			"EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL=2m"}},
		"equal to the lifetime": {env: []string{"EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL=30m"},
			want: "process_run.workspace_ttl: 30m0s must be longer than process_run.max_background_lifetime (30m0s)"},
		"below the lifetime": {env: []string{"EXECLEDGER_PROCESS_RUN_MAX_BACKGROUND_LIFETIME=10m", "EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL=5m"},
			want: "process_run.workspace_ttl: 5m0s must be longer than process_run.max_background_lifetime (10m0s)"},
		"negative":       {env: []string{"EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL=-1h"}, want: "process_run.workspace_ttl: -1h0m0s is negative"},
		"zero interval":  {env: []string{"EXECLEDGER_PROCESS_RUN_WORKSPACE_SWEEP_INTERVAL=0"}, want: "process_run.workspace_sweep_interval"},
		"not a duration": {env: []string{"EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL=off"}, want: "EXECLEDGER_PROCESS_RUN_WORKSPACE_TTL"},
	} {
		cfg, err := Load("", tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want it to mention %q (workspace_ttl %s)", name, err, tc.want, cfg.Process.WorkspaceTTL)
		}
	}
	p := writeFile(t, "[process_run]\nworkspace_ttl = \"3h\"\nworkspace_sweep_interval = \"1m\"\n")
	cfg, err := Load(p, nil)
	if err != nil || cfg.Process.WorkspaceTTL.Duration != 3*time.Hour || cfg.Process.WorkspaceSweepInterval.Duration != time.Minute {
		t.Fatalf("from a file: %+v, %v", cfg.Process, err)
	}
}

// TestDevDefault: dev starts with process.run (tier auto) and tier A on,
// and a file or variable still turns either off.
func TestDevDefault(t *testing.T) {
	cfg, err := LoadOnto(DevDefault(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Process.Enabled || cfg.Process.Tier != "auto" || !cfg.Wasm.Enabled || !cfg.Skills.Enabled ||
		len(cfg.Process.AllowedExecutables) == 0 {
		t.Errorf("dev's defaults: process_run %+v, wasm enabled %v", cfg.Process, cfg.Wasm.Enabled)
	}
	if d := Default(); d.Process.Enabled || d.Wasm.Enabled || d.Process.Tier != "C" {
		t.Error("DevDefault changed serve's defaults")
	}
	path := writeFile(t, "[wasm]\nenabled = false\n")
	cfg, err = LoadOnto(DevDefault(), path, []string{"EXECLEDGER_PROCESS_RUN_ENABLED=false"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Process.Enabled || cfg.Wasm.Enabled {
		t.Errorf("the file and the environment did not turn them off: process_run %v, wasm %v", cfg.Process.Enabled, cfg.Wasm.Enabled)
	}
	if cfg.Executor.DefaultMaxCallsPerRun != DefaultMaxCallsPerRun {
		t.Errorf("default budget %d", cfg.Executor.DefaultMaxCallsPerRun)
	}
}
