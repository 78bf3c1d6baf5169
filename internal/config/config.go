// Package config loads Execledger's configuration: defaults, then a TOML
// file, then EXECLEDGER_* environment variables, then validation.
//
// Every key of the file can be overridden by an environment variable named
// EXECLEDGER_ followed by its path in upper case with sections joined by
// "_": serve.listen is EXECLEDGER_SERVE_LISTEN. DATABASE_URL sets
// database.url too (EXECLEDGER_DATABASE_URL wins over it). Unknown keys in
// the file and unknown EXECLEDGER_ variables are errors, so a typo never
// silently falls back to a default. Lists of tables ([[wasm.modules]]) are
// the exception: no variable can express one, so they are set in the file
// only.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/execledger/execledger/internal/egress"
)

// EnvPrefix starts every environment variable that overrides a key.
const EnvPrefix = "EXECLEDGER_"

// envNotKeys are EXECLEDGER_ variables that are not configuration keys.
var envNotKeys = map[string]bool{"EXECLEDGER_CONFIG": true}

// Config is the whole configuration.
type Config struct {
	Database  Database  `toml:"database"`
	Log       Log       `toml:"log"`
	Serve     Serve     `toml:"serve"`
	Executor  Executor  `toml:"executor"`
	Projector Projector `toml:"projector"`
	Sealer    Sealer    `toml:"sealer"`
	Policy    Policy    `toml:"policy"`
	Attest    Attest    `toml:"attest"`
	Process   Process   `toml:"process_run"`
	Wasm      Wasm      `toml:"wasm"`
	Skills    Skills    `toml:"skills"`
	MCP       MCP       `toml:"mcp"`
	Console   Console   `toml:"console"`
	Dev       Dev       `toml:"dev"`
}

// Executor configures the executor loops of `execledger serve`.
type Executor struct {
	Enabled               bool     `toml:"enabled"`                   // false: serve runs no executor
	Workers               int      `toml:"workers"`                   // requests run at once
	ClaimBatch            int      `toml:"claim_batch"`               // requests claimed per transaction
	Lease                 Duration `toml:"lease"`                     // claim lease; heartbeats extend it
	PollInterval          Duration `toml:"poll_interval"`             // claim attempts without a NOTIFY
	RescueInterval        Duration `toml:"rescue_interval"`           // expired leases and approvals
	ShutdownGrace         Duration `toml:"shutdown_grace"`            // in-flight work may finish this long after SIGTERM
	ToolTimeout           Duration `toml:"tool_timeout"`              // the longest any call runs
	DefaultMaxCallsPerRun int      `toml:"default_max_calls_per_run"` // a run's budget unless set by ledger.set_run_budget
	Sensitive             []string `toml:"sensitive"`                 // tools that wait for ledger.approve
	ApprovalTimeout       Duration `toml:"approval_timeout"`          // a request waits this long for approval
	MaxAttempts           int      `toml:"max_attempts"`              // claims of one request before a lost lease ends it
}

// Process configures the process.run tool (sandbox tiers B and C).
type Process struct {
	Enabled            bool     `toml:"enabled"`             // off unless asked for
	Tier               string   `toml:"tier"`                // "C" (bubblewrap), "B" (init helper and rlimits), or "auto": C where bubblewrap works, else B (root only)
	WorkspaceRoot      string   `toml:"workspace_root"`      // each run gets <root>/<principal>/<run_id>
	AllowedExecutables []string `toml:"allowed_executables"` // case-insensitive names; "*" = any
	AllowInterpreters  bool     `toml:"allow_interpreters"`  // sh, python, node, ... and launchers that spawn them
	EgressMode         string   `toml:"egress_mode"`         // none, preflight or strict
	EgressAllowlist    []string `toml:"egress_allowlist"`    // host names (each admits itself and its subdomains), IP addresses, CIDR ranges
	MaxTimeout         Duration `toml:"max_timeout"`         // the longest timeout_ms honoured
	OutputLimitBytes   int      `toml:"output_limit_bytes"`  // stdout and stderr together
	KillGrace          Duration `toml:"kill_grace"`          // between TERM and KILL
	UID                int      `toml:"uid"`                 // the sandboxed process's uid
	GID                int      `toml:"gid"`
	// rlimits of the sandboxed process tree (tiers B and C); 0 leaves one
	// unset, RLIMIT_CORE is always 0
	RlimitCPUSeconds   int `toml:"rlimit_cpu_seconds"`
	RlimitAddressSpace int `toml:"rlimit_address_space_bytes"` // 0: off; Go and JVM programs need far more than they use
	RlimitFileSize     int `toml:"rlimit_file_size_bytes"`
	RlimitOpenFiles    int `toml:"rlimit_open_files"`
	RlimitProcesses    int `toml:"rlimit_processes"`
	// strict egress (tier C): destination ports the proxy admits, and the
	// private/loopback ranges (CIDR) declared hosts may resolve into
	EgressPorts         []int    `toml:"egress_ports"`
	EgressPrivateRanges []string `toml:"egress_private_ranges"`
	// background processes ("background" in process.run's input)
	Background            bool     `toml:"background"`              // allow them at all
	AllowDetached         bool     `toml:"allow_detached"`          // mode "detached": not ended with the run
	MaxBackground         int      `toml:"max_background"`          // per executor process
	MaxBackgroundPerRun   int      `toml:"max_background_per_run"`  // running at once, over all executors
	MaxBackgroundLifetime Duration `toml:"max_background_lifetime"` // at most 30m
	// tier B
	Cgroups  string `toml:"cgroups"`   // auto, required or off: a cgroup v2 leaf per process (tier B) or sandbox (tier C)
	UIDBase  int    `toml:"uid_base"`  // per-run uids are [uid_base, uid_base+uid_count)
	UIDCount int    `toml:"uid_count"` //
	// workspace lifecycle: a run's workspace is deleted once the ledger
	// shows the run idle this long and no process holds it; "0" keeps
	// workspaces forever; otherwise longer than max_background_lifetime
	WorkspaceTTL           Duration `toml:"workspace_ttl"`
	WorkspaceSweepInterval Duration `toml:"workspace_sweep_interval"` // how often idle workspaces are looked for
}

// Policy names the Cedar policy files every request is authorized against.
type Policy struct {
	Files []string `toml:"files"`
	// ReloadInterval is how often serve and dev read the files again: an
	// edit that loads is put in force (policy.published), one that does
	// not is refused with a log line and the policy in force stays. 0
	// turns reloading off.
	ReloadInterval Duration `toml:"reload_interval"`
}

// Attest configures attestation signing.
type Attest struct {
	KeyFile string `toml:"key_file"` // Ed25519 private key (PEM, PKCS #8, mode 0600); `execledger keygen` writes one
}

// Database says where the ledger lives.
type Database struct {
	URL string `toml:"url"` // postgres:// URL; DATABASE_URL sets it too
	// ReplicaURL is a hot standby (or a multi-host URL with
	// target_session_attrs=prefer-standby) that the read-only commands
	// use instead of URL: verify --db, export, prove, requests, status,
	// audit; submit --wait waits until it has replayed the final state.
	// "": they read URL. Writers (serve, the sealer, projections,
	// witness, migrate) always use URL.
	ReplicaURL     string   `toml:"replica_url"`
	MaxConns       int      `toml:"max_conns"`       // pool size
	ConnectTimeout Duration `toml:"connect_timeout"` // per connection attempt
}

// Log configures the process log.
type Log struct {
	Level  string `toml:"level"`  // debug, info, warn, error
	Format string `toml:"format"` // text or json
}

// Projector configures the projection engine of `execledger serve`, which
// keeps the asynchronous read models (audit trail, quota usage, skill
// status) current. Any number of serve processes may run it: one runner
// per projection works at a time.
type Projector struct {
	Enabled      bool     `toml:"enabled"`       // false: this serve runs no projection
	BatchSize    int      `toml:"batch_size"`    // events applied per transaction
	PollInterval Duration `toml:"poll_interval"` // how often a caught-up runner looks for new events
}

// Sealer configures the Merkle log's sealer in `execledger serve`: it
// appends every committed event to the log and signs checkpoints (C2SP
// tlog-checkpoint notes). Any number of serve processes may run it; one
// seals at a time.
type Sealer struct {
	Enabled            bool     `toml:"enabled"`             // false: this serve seals nothing
	NoteKeyFile        string   `toml:"note_key_file"`       // the log's note signing key (`execledger keygen --note`); "": the tree grows, no checkpoint is signed
	CheckpointEvery    int      `toml:"checkpoint_every"`    // sign once this many events wait for a checkpoint...
	CheckpointInterval Duration `toml:"checkpoint_interval"` // ...or once the newest checkpoint is this old and an event waits
	WitnessKeys        []string `toml:"witness_keys"`        // witness public key files; with any, a checkpoint is published once cosigned by...
	WitnessQuorum      int      `toml:"witness_quorum"`      // ...this many of them (0: all)
	BatchSize          int      `toml:"batch_size"`          // events sealed per transaction
	AuditInterval      Duration `toml:"audit_interval"`      // how often the sealer looks for events below its cursor that are no leaf (unsealed_event)
}

// Serve configures `execledger serve`.
type Serve struct {
	Listen string `toml:"listen"` // address of /healthz and /metrics; "" turns them off
	Label  string `toml:"label"`  // this executor's name in events and metrics; default: hostname
	// principals (those with the most calls) with execledger_quota_* series
	// of their own; the others are summed into principal="other"
	QuotaMetricsTopK int `toml:"quota_metrics_top_k"`
}

// Dev configures the embedded PostgreSQL of `execledger dev`.
type Dev struct {
	DataDir string `toml:"data_dir"` // reused between runs
	Port    int    `toml:"port"`     // 0 = a random free port
	RunAs   string `toml:"run_as"`   // unprivileged user for PostgreSQL when started as root
}

// Duration is a time.Duration written as "1.5s" in TOML and environment.
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText writes the Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// The [process] defaults, which the process.run tool (processrun) also
// takes for a zero field: one set of numbers.
const (
	ProcessOutputLimit            = 64 << 10
	ProcessKillGrace              = 500 * time.Millisecond
	ProcessUID                    = 65534 // nobody
	ProcessGID                    = 65534
	ProcessUIDBase                = 200000
	ProcessUIDCount               = 65536
	ProcessRlimitCPUSeconds       = 2
	ProcessRlimitFileSize         = 64 << 20
	ProcessRlimitOpenFiles        = 256
	ProcessRlimitProcesses        = 256
	ProcessWorkspaceSweepInterval = 5 * time.Minute
)

// DefaultMaxCallsPerRun is a run's budget unless ledger.set_run_budget
// sets one: enough for an agent session or a job's tool calls (tens of
// them), low enough to stop a call loop that runs away.
const DefaultMaxCallsPerRun = 100

// DevAllowedExecutables are the programs process.run may start under
// `execledger dev` unless the configuration names others: harmless ones
// to try the tool with.
var DevAllowedExecutables = []string{"echo", "ls", "cat", "pwd", "date", "uname", "id", "true", "false", "wc", "head", "tail", "sort", "grep"}

// DevDefault is the configuration `execledger dev` starts from: Default
// with process.run (tier auto) and tier A on, so that a new user's demo
// runs programs and installed skills. A file or variable still sets any
// key, these included.
func DevDefault() Config {
	c := Default()
	c.Process.Enabled, c.Process.Tier = true, "auto"
	c.Process.AllowedExecutables = slices.Clone(DevAllowedExecutables)
	c.Wasm.Enabled = true
	return c
}

// Default is the configuration before any file or variable.
func Default() Config {
	host, _ := os.Hostname()
	return Config{
		Database: Database{MaxConns: 16, ConnectTimeout: Duration{10 * time.Second}},
		Log:      Log{Level: "info", Format: "text"},
		Serve:    Serve{Listen: "127.0.0.1:9464", Label: host, QuotaMetricsTopK: 20},
		Executor: Executor{Enabled: true, Workers: 64, ClaimBatch: 64, Lease: Duration{30 * time.Second},
			PollInterval: Duration{time.Second}, RescueInterval: Duration{5 * time.Second},
			ShutdownGrace: Duration{10 * time.Second}, ToolTimeout: Duration{30 * time.Second},
			DefaultMaxCallsPerRun: DefaultMaxCallsPerRun, Sensitive: []string{}, ApprovalTimeout: Duration{15 * time.Minute}, MaxAttempts: 10},
		Projector: Projector{Enabled: true, BatchSize: 500, PollInterval: Duration{100 * time.Millisecond}},
		Sealer: Sealer{Enabled: true, CheckpointEvery: 1000, CheckpointInterval: Duration{time.Second},
			WitnessKeys: []string{}, BatchSize: 1000, AuditInterval: Duration{time.Minute}},
		Policy: Policy{Files: []string{}, ReloadInterval: Duration{2 * time.Second}},
		Process: Process{Tier: "C", WorkspaceRoot: filepath.Join(".execledger", "workspaces"), AllowedExecutables: []string{},
			EgressMode: "none", EgressAllowlist: []string{}, MaxTimeout: Duration{30 * time.Second},
			OutputLimitBytes: ProcessOutputLimit, KillGrace: Duration{ProcessKillGrace}, UID: ProcessUID, GID: ProcessGID,
			RlimitCPUSeconds: ProcessRlimitCPUSeconds, RlimitFileSize: ProcessRlimitFileSize, RlimitOpenFiles: ProcessRlimitOpenFiles,
			RlimitProcesses: ProcessRlimitProcesses,
			EgressPorts:     slices.Clone(egress.DefaultPorts), EgressPrivateRanges: []string{},
			Background: true, MaxBackground: 16, MaxBackgroundPerRun: 4, MaxBackgroundLifetime: Duration{30 * time.Minute},
			Cgroups: "auto", UIDBase: ProcessUIDBase, UIDCount: ProcessUIDCount,
			WorkspaceTTL: Duration{2 * time.Hour}, WorkspaceSweepInterval: Duration{ProcessWorkspaceSweepInterval}},
		Wasm:    defaultWasm(),
		Skills:  defaultSkills(),
		MCP:     defaultMCP(),
		Console: defaultConsole(),
		Dev:     Dev{DataDir: filepath.Join(".execledger", "pgdata")},
	}
}

// Load reads the file at path (none when ""), applies the environment given
// by environ (os.Environ's form) and validates the result.
func Load(path string, environ []string) (Config, error) {
	return LoadOnto(Default(), path, environ)
}

// LoadOnto is Load starting from cfg instead of Default (DevDefault for
// `execledger dev`).
func LoadOnto(cfg Config, path string, environ []string) (Config, error) {
	if path != "" {
		md, err := toml.DecodeFile(path, &cfg)
		if err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", path, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			keys := make([]string, len(und))
			for i, k := range und {
				keys[i] = k.String()
			}
			return Config{}, fmt.Errorf("config: %s: unknown keys: %s", path, strings.Join(keys, ", "))
		}
		dir, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", path, err)
		}
		cfg.Wasm.normalize(dir)
	}
	if err := applyEnv(&cfg, environ); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks every value and says which key is wrong.
func (c Config) Validate() error {
	var errs []error
	if c.Database.URL != "" {
		if u, err := url.Parse(c.Database.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			errs = append(errs, errors.New("database.url: want a postgres:// URL"))
		}
	}
	if c.Database.ReplicaURL != "" {
		if u, err := url.Parse(c.Database.ReplicaURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			errs = append(errs, errors.New("database.replica_url: want a postgres:// URL"))
		}
	}
	if c.Database.MaxConns < 1 || c.Database.MaxConns > 1000 {
		errs = append(errs, fmt.Errorf("database.max_conns: %d is not between 1 and 1000", c.Database.MaxConns))
	}
	if c.Database.ConnectTimeout.Duration <= 0 {
		errs = append(errs, errors.New("database.connect_timeout: must be positive"))
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.Log.Level)); err != nil {
		errs = append(errs, fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Log.Level))
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		errs = append(errs, fmt.Errorf("log.format: %q is not text or json", c.Log.Format))
	}
	if c.Serve.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Serve.Listen); err != nil {
			errs = append(errs, fmt.Errorf("serve.listen: %v", err))
		}
	}
	if c.Serve.Label == "" {
		errs = append(errs, errors.New("serve.label: must not be empty"))
	}
	if c.Projector.BatchSize < 1 || c.Projector.BatchSize > 100000 {
		errs = append(errs, fmt.Errorf("projector.batch_size: %d is not between 1 and 100000", c.Projector.BatchSize))
	}
	if c.Projector.PollInterval.Duration <= 0 {
		errs = append(errs, errors.New("projector.poll_interval: must be positive"))
	}
	if sl := c.Sealer; sl.CheckpointEvery < 1 || sl.CheckpointInterval.Duration <= 0 || sl.BatchSize < 1 || sl.BatchSize > 100000 ||
		sl.WitnessQuorum < 0 || sl.WitnessQuorum > len(sl.WitnessKeys) {
		errs = append(errs, errors.New("sealer: checkpoint_every must be at least 1, checkpoint_interval positive, batch_size between 1 and 100000, and witness_quorum between 0 and the number of witness_keys"))
	}
	if c.Sealer.AuditInterval.Duration < time.Second {
		errs = append(errs, errors.New("sealer.audit_interval: must be at least 1s (each audit is a scan of ledger.events)"))
	}
	if c.Serve.QuotaMetricsTopK < 1 || c.Serve.QuotaMetricsTopK > 1000 {
		errs = append(errs, fmt.Errorf("serve.quota_metrics_top_k: %d is not between 1 and 1000", c.Serve.QuotaMetricsTopK))
	}
	x := c.Executor
	if x.Workers < 1 || x.Workers > 10000 || x.ClaimBatch < 1 || x.ClaimBatch > 10000 {
		errs = append(errs, errors.New("executor.workers and executor.claim_batch: must be between 1 and 10000"))
	}
	if x.Lease.Duration < time.Second {
		errs = append(errs, fmt.Errorf("executor.lease: %s is shorter than 1s", x.Lease))
	}
	for name, d := range map[string]Duration{"poll_interval": x.PollInterval, "rescue_interval": x.RescueInterval,
		"tool_timeout": x.ToolTimeout, "approval_timeout": x.ApprovalTimeout} {
		if d.Duration <= 0 {
			errs = append(errs, fmt.Errorf("executor.%s: must be positive", name))
		}
	}
	if x.ShutdownGrace.Duration < 0 {
		errs = append(errs, errors.New("executor.shutdown_grace: must not be negative"))
	}
	if c.Policy.ReloadInterval.Duration < 0 {
		errs = append(errs, errors.New("policy.reload_interval: must not be negative (0 turns reloading off)"))
	}
	if x.DefaultMaxCallsPerRun < 0 {
		errs = append(errs, errors.New("executor.default_max_calls_per_run: must not be negative"))
	}
	if x.MaxAttempts < 1 {
		errs = append(errs, errors.New("executor.max_attempts: must be at least 1"))
	}
	p := c.Process
	if p.Tier != "B" && p.Tier != "C" && p.Tier != "auto" {
		errs = append(errs, fmt.Errorf("process_run.tier: %q is not B, C or auto", p.Tier))
	}
	if p.EgressMode != "none" && p.EgressMode != "preflight" && p.EgressMode != "strict" {
		errs = append(errs, fmt.Errorf("process_run.egress_mode: %q is not none, preflight or strict", p.EgressMode))
	}
	if _, err := egress.ParseDomainAllowlist(p.EgressAllowlist); err != nil {
		errs = append(errs, fmt.Errorf("process_run.egress_allowlist: %w", err))
	}
	if p.Enabled && p.WorkspaceRoot == "" {
		errs = append(errs, errors.New("process_run.workspace_root: must not be empty"))
	}
	if p.OutputLimitBytes < 1 || p.MaxTimeout.Duration <= 0 || p.KillGrace.Duration < 0 || p.UID < 0 || p.GID < 0 {
		errs = append(errs, errors.New("process_run: output_limit_bytes and max_timeout must be positive, kill_grace, uid and gid not negative"))
	}
	errs = append(errs, p.validateLimitsAndEgress()...)
	errs = append(errs, p.validateWorkspaceTTL()...)
	if p.MaxBackground < 1 || p.MaxBackgroundPerRun < 1 || p.MaxBackgroundLifetime.Duration <= 0 || p.MaxBackgroundLifetime.Duration > 30*time.Minute {
		errs = append(errs, errors.New("process_run: max_background and max_background_per_run must be positive, max_background_lifetime between 0 and 30m"))
	}
	if p.Cgroups != "auto" && p.Cgroups != "required" && p.Cgroups != "off" {
		errs = append(errs, fmt.Errorf("process_run.cgroups: %q is not auto, required or off", p.Cgroups))
	}
	if p.UIDBase < 1000 || p.UIDCount < 1 || int64(p.UIDBase)+int64(p.UIDCount) > 1<<32-2 {
		errs = append(errs, errors.New("process_run: uid_base must be at least 1000, uid_count positive, and the range below 4294967294"))
	}
	errs = append(errs, c.Wasm.validate()...)
	errs = append(errs, c.Skills.validate()...)
	errs = append(errs, c.MCP.validate()...)
	errs = append(errs, c.Console.validate()...)
	if c.Dev.DataDir == "" {
		errs = append(errs, errors.New("dev.data_dir: must not be empty"))
	}
	if c.Dev.Port < 0 || c.Dev.Port > 65535 {
		errs = append(errs, fmt.Errorf("dev.port: %d is not a port", c.Dev.Port))
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return nil
}

// validateLimitsAndEgress checks the rlimit and strict-egress keys of
// [process_run].
func (p Process) validateLimitsAndEgress() []error {
	var errs []error
	if p.RlimitCPUSeconds < 0 || p.RlimitAddressSpace < 0 || p.RlimitFileSize < 0 || p.RlimitOpenFiles < 0 || p.RlimitProcesses < 0 {
		errs = append(errs, errors.New("process_run.rlimit_*: must not be negative"))
	}
	for _, port := range p.EgressPorts {
		if port < 1 || port > 65535 {
			errs = append(errs, fmt.Errorf("process_run.egress_ports: %d is not a port", port))
		}
	}
	for _, r := range p.EgressPrivateRanges {
		if pr, err := netip.ParsePrefix(r); err != nil || pr.Bits() == 0 {
			errs = append(errs, fmt.Errorf("process_run.egress_private_ranges: %q is not a CIDR range narrower than /0", r))
		}
	}
	return errs
}

// validateWorkspaceTTL checks the workspace lifecycle keys of
// [process_run]. A workspace outlives the longest background process of
// its run: the sweep checks for running ones anyway, but a TTL shorter
// than a process may live is a configuration mistake.
func (p Process) validateWorkspaceTTL() []error {
	var errs []error
	ttl := p.WorkspaceTTL.Duration
	switch {
	case ttl < 0:
		errs = append(errs, fmt.Errorf("process_run.workspace_ttl: %s is negative; use 0 to keep workspaces forever", p.WorkspaceTTL))
	case ttl > 0 && ttl <= p.MaxBackgroundLifetime.Duration:
		errs = append(errs, fmt.Errorf("process_run.workspace_ttl: %s must be longer than process_run.max_background_lifetime (%s), or 0 to keep workspaces forever",
			p.WorkspaceTTL, p.MaxBackgroundLifetime))
	}
	if p.WorkspaceSweepInterval.Duration <= 0 {
		errs = append(errs, errors.New("process_run.workspace_sweep_interval: must be positive"))
	}
	return errs
}

// SlogLevel is the configured log level.
func (c Config) SlogLevel() slog.Level {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Log.Level))
	return lvl
}

// applyEnv sets each key named by an EXECLEDGER_ variable.
func applyEnv(cfg *Config, environ []string) error {
	fields := map[string]reflect.Value{}
	collectFields(reflect.ValueOf(cfg).Elem(), "", fields)
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if v, ok := env["DATABASE_URL"]; ok && v != "" {
		cfg.Database.URL = v
	}
	var names []string
	for k := range env {
		if strings.HasPrefix(k, EnvPrefix) && !envNotKeys[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		key := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
		f, ok := fields[key]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no such configuration key", name))
			continue
		}
		if err := setField(f, env[name]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return nil
}

var textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()

// collectFields maps "section_key" paths to settable fields.
func collectFields(v reflect.Value, prefix string, out map[string]reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "_" + name
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && !reflect.PointerTo(fv.Type()).Implements(textUnmarshaler) {
			collectFields(fv, path, out)
			continue
		}
		out[path] = fv
	}
}

func setField(f reflect.Value, s string) error {
	if f.CanAddr() && f.Addr().Type().Implements(textUnmarshaler) {
		return f.Addr().Interface().(interface{ UnmarshalText([]byte) error }).UnmarshalText([]byte(s))
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", s)
		}
		f.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		f.SetBool(b)
	case reflect.Slice:
		var items []string
		for _, it := range strings.Split(s, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		switch f.Type().Elem().Kind() {
		case reflect.String:
			f.Set(reflect.ValueOf(items))
		case reflect.Int:
			ns := make([]int, 0, len(items))
			for _, it := range items {
				n, err := strconv.Atoi(it)
				if err != nil {
					return fmt.Errorf("%q is not an integer", it)
				}
				ns = append(ns, n)
			}
			f.Set(reflect.ValueOf(ns))
		case reflect.Struct:
			return errors.New("a list of tables: set it in the configuration file")
		default:
			return fmt.Errorf("unsupported list type %s", f.Type())
		}
	default:
		return fmt.Errorf("unsupported type %s", f.Type())
	}
	return nil
}
