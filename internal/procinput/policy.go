package procinput

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/execledger/execledger/internal/egress"
)

// Egress modes.
const (
	// EgressNone performs no egress checks (Palyra's "none").
	EgressNone = "none"
	// EgressPreflight checks every host the request names against the
	// allowlist, as text, before spawning. It stops honest mistakes, not a
	// process that builds a URL at run time.
	EgressPreflight = "preflight"
	// EgressStrict does what preflight does, additionally requires every
	// host found in the arguments to be declared in requested_egress_hosts,
	// and hands the declared hosts to the sandbox in Plan.EgressHosts for
	// enforcement.
	EgressStrict = "strict"
)

// Defaults applied by Check to zero Policy fields.
const (
	DefaultMaxArgs               = 128
	DefaultMaxArgBytes           = 4096
	DefaultMaxCommandBytes       = 256
	DefaultMaxEgressHosts        = 32
	DefaultPath                  = "/usr/local/bin:/usr/bin:/bin"
	DefaultTimeout               = 30 * time.Second
	DefaultMaxTimeout            = 30 * time.Second
	DefaultBackgroundLifetime    = 10 * time.Minute
	DefaultMaxBackgroundLifetime = 30 * time.Minute
	defaultEgressMode            = EgressStrict
	allowAnyExecutable           = "*"
)

// Policy is the operator's configuration for process.run. The zero value of
// every field but WorkspaceRoot has a default (see the Default constants);
// EgressMode defaults to strict, the only mode that fails closed.
type Policy struct {
	// AllowedExecutables are bare program names, matched case-insensitively
	// against the command and against its normalised name (lower case,
	// without .exe/.cmd/.bat/.com). "*" allows any program; interpreters
	// and launch forms still need AllowInterpreters.
	AllowedExecutables []string
	// AllowInterpreters allows shells and language interpreters, and the
	// launch forms that Check can read to the program they start (env
	// COMMAND, env -S, xargs, find -exec/-execdir/-ok/-okdir, nice, nohup,
	// timeout, stdbuf, setsid, ionice, chrt, taskset, flock, time). That
	// program needs no allowlist entry but meets every other rule of the
	// command (no eval flags, embedded paths, cmd or name kills, and its own
	// launch forms), recursively. Forms whose command cannot be read (a
	// command line in an option, as in git -c core.pager=..., make
	// SHELL=..., tar --to-command=...; wrappers such as sudo, strace or
	// watch; options a launcher is not known to take) are refused even so.
	// sed and awk scripts, which can run commands, are allowed with it.
	AllowInterpreters bool
	// AllowDetached allows background processes that outlive the run.
	AllowDetached bool
	// EgressMode is EgressNone, EgressPreflight or EgressStrict.
	EgressMode string
	// EgressAllowlist holds host names, IP addresses and CIDR ranges, read
	// by egress.ParseDomainAllowlist: the proxy's rules, in Palyra's
	// grammar. A name of two labels or more matches itself and every name
	// below it at a label boundary: "corp.local" matches "api.corp.local"
	// but not "evilcorp.local"; a single-label name ("localhost") matches
	// only itself. A leading "*." or "." is ignored ("*.com" is refused as
	// too broad). Matching is case-insensitive and ignores a trailing dot;
	// names are ASCII (IDNs in punycode); IP addresses match exactly or by
	// range. Hosts, in requests and arguments, are read by egress.ParseHost,
	// as the proxy reads them.
	EgressAllowlist []string
	// WorkspaceRoot is the run's workspace, an absolute path. It is
	// canonicalised (symlinks resolved) on every Check.
	WorkspaceRoot string
	// Path is the child's PATH: absolute directories, none inside the
	// workspace (a program planted there must not shadow an allowlisted one).
	Path string

	MaxArgs, MaxArgBytes, MaxCommandBytes, MaxEgressHosts int

	// MaxTimeout caps a foreground run; a request without timeout_ms gets
	// min(DefaultTimeout, MaxTimeout).
	MaxTimeout time.Duration
	// DefaultBackgroundLifetime and MaxBackgroundLifetime are the lifetime of
	// a background process without lifetime_ms or timeout_ms, and the cap.
	DefaultBackgroundLifetime, MaxBackgroundLifetime time.Duration
}

// withDefaults returns p with zero fields defaulted and validated.
func (p Policy) withDefaults() (Policy, error) {
	for _, f := range []*int{&p.MaxArgs, &p.MaxArgBytes, &p.MaxCommandBytes, &p.MaxEgressHosts} {
		if *f < 0 {
			return p, fmt.Errorf("%w: negative limit %d", ErrInvalidPolicy, *f)
		}
	}
	for _, d := range []time.Duration{p.MaxTimeout, p.DefaultBackgroundLifetime, p.MaxBackgroundLifetime} {
		if d < 0 {
			return p, fmt.Errorf("%w: negative duration %s", ErrInvalidPolicy, d)
		}
	}
	p.MaxArgs = orInt(p.MaxArgs, DefaultMaxArgs)
	p.MaxArgBytes = orInt(p.MaxArgBytes, DefaultMaxArgBytes)
	p.MaxCommandBytes = orInt(p.MaxCommandBytes, DefaultMaxCommandBytes)
	p.MaxEgressHosts = orInt(p.MaxEgressHosts, DefaultMaxEgressHosts)
	p.MaxTimeout = orDuration(p.MaxTimeout, DefaultMaxTimeout)
	p.DefaultBackgroundLifetime = orDuration(p.DefaultBackgroundLifetime, DefaultBackgroundLifetime)
	p.MaxBackgroundLifetime = orDuration(p.MaxBackgroundLifetime, DefaultMaxBackgroundLifetime)
	if p.Path == "" {
		p.Path = DefaultPath
	}
	if p.EgressMode == "" {
		p.EgressMode = defaultEgressMode
	}
	return p, p.validate()
}

func (p Policy) validate() error {
	if p.WorkspaceRoot == "" || !filepath.IsAbs(p.WorkspaceRoot) {
		return fmt.Errorf("%w: WorkspaceRoot %q is not an absolute path", ErrInvalidPolicy, p.WorkspaceRoot)
	}
	switch p.EgressMode {
	case EgressNone, EgressPreflight, EgressStrict:
	default:
		return fmt.Errorf("%w: EgressMode %q is not none, preflight or strict", ErrInvalidPolicy, p.EgressMode)
	}
	for _, dir := range strings.Split(p.Path, ":") {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("%w: Path entry %q is not absolute", ErrInvalidPolicy, dir)
		}
	}
	for _, e := range p.AllowedExecutables {
		if e != allowAnyExecutable && (e == "" || strings.ContainsAny(e, "/\\ \t\n")) {
			return fmt.Errorf("%w: AllowedExecutables entry %q is not a bare program name", ErrInvalidPolicy, e)
		}
	}
	_, err := p.egressAllowlist()
	return err
}

// egressAllowlist parses EgressAllowlist with the egress proxy's rules.
func (p Policy) egressAllowlist() (*egress.Allowlist, error) {
	a, err := egress.ParseDomainAllowlist(p.EgressAllowlist)
	if err != nil {
		return nil, fmt.Errorf("%w: EgressAllowlist: %w", ErrInvalidPolicy, err)
	}
	return a, nil
}

// checkPathOutside refuses PATH entries inside the canonical workspace root.
func (p Policy) checkPathOutside(root string) error {
	for _, dir := range strings.Split(p.Path, ":") {
		clean := filepath.Clean(dir)
		if canon, err := filepath.EvalSymlinks(clean); err == nil {
			clean = canon
		}
		if within(root, clean) {
			return fmt.Errorf("%w: Path entry %q is inside the workspace", ErrInvalidPolicy, dir)
		}
	}
	return nil
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orDuration(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}
