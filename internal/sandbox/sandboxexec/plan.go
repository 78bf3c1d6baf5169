package sandboxexec

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Labels recorded in events and attestations, after Palyra's.
const (
	// Executor is the executor label of a tier C run under this backend.
	Executor = "sandbox_tier_c_macos_sandbox_exec"
	// Backend is the sandbox_backend and the enforcement record's backend.
	Backend = "macos_sandbox_exec"
)

// Path is where macOS installs sandbox-exec.
const Path = "/usr/bin/sandbox-exec"

// DefaultPath is PATH when Env does not set one.
const DefaultPath = "/usr/bin:/bin:/usr/sbin:/sbin"

// ErrInvalidPlan is wrapped by every error a malformed Plan produces.
var ErrInvalidPlan = errors.New("invalid sandbox-exec plan")

// ErrUnsupported is wrapped by every runner error on a platform other
// than macOS. It wraps errors.ErrUnsupported.
var ErrUnsupported = fmt.Errorf("sandbox-exec sandboxes need macOS: %w", errors.ErrUnsupported)

// Plan is one tier C execution under sandbox-exec.
type Plan struct {
	// Program is the absolute, canonical path of the executable. It is
	// the only program the process may execute unless Exec names others.
	Program string
	// ProgramArgs are its arguments, without argv[0].
	ProgramArgs []string
	// Env is the whole environment, as KEY=VALUE: the program gets
	// nothing else. PATH defaults to DefaultPath, and TMPDIR to TempDir
	// when TempDir is set.
	Env []string
	// Workspace is a directory the process may read and write. It may
	// not be a top-level directory nor overlap the system paths the
	// profile grants.
	Workspace string
	// Dir is where the process starts: Workspace or a directory below
	// it; "" means Workspace.
	Dir string
	// TempDir, when set, is a second directory the process may read and
	// write, for temporary files, under the same rules as Workspace.
	TempDir string
	// ReadOnly are further files or directories the process may read
	// and map as code, such as a toolchain outside the system
	// directories.
	ReadOnly []string
	// Exec are further executables the process may run, by exact path:
	// the interpreter of a script, or the programs a tool starts.
	Exec []string
	// Fork allows fork and its variants. Children inherit the profile.
	// A program that starts others (shells, make, git) needs it.
	Fork bool
	// Network allows outbound TCP connections to ProxyPort on the
	// loopback interface, and nothing else: the egress proxy enforces
	// the host allowlist. Point clients at 127.0.0.1:ProxyPort
	// (HTTPS_PROXY), not at "localhost", whose lookup needs a Mach
	// service the profile denies.
	Network bool
	// ProxyPort is the egress proxy's TCP port; required with Network
	// and refused without it.
	ProxyPort int
}

// env returns Env with PATH and TMPDIR defaulted.
func (p Plan) env() []string {
	hasPath, hasTmp := false, false
	for _, kv := range p.Env {
		hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
		hasTmp = hasTmp || strings.HasPrefix(kv, "TMPDIR=")
	}
	var env []string
	if !hasPath {
		env = append(env, "PATH="+DefaultPath)
	}
	env = append(env, p.Env...)
	if !hasTmp && p.TempDir != "" {
		env = append(env, "TMPDIR="+p.TempDir)
	}
	return env
}

// dir returns Dir with its default.
func (p Plan) dir() string {
	if p.Dir == "" {
		return p.Workspace
	}
	return p.Dir
}

// checkPaths rejects a path that cannot appear in the profile: not
// absolute, not clean, the root, not UTF-8, or with a control character
// (NUL, newline and the rest of C0 and C1, DEL).
func checkPaths(what string, paths ...string) error {
	for _, path := range paths {
		if !utf8.ValidString(path) || strings.ContainsFunc(path, unicode.IsControl) {
			return fmt.Errorf("%w: %s %q contains a control character or is not UTF-8", ErrInvalidPlan, what, path)
		}
		if !filepath.IsAbs(path) || filepath.Clean(path) != path {
			return fmt.Errorf("%w: %s %q must be a clean absolute path", ErrInvalidPlan, what, path)
		}
		if path == "/" {
			return fmt.Errorf("%w: %s may not be the root directory", ErrInvalidPlan, what)
		}
	}
	return nil
}

// checkWritable rejects a read-write path that is a top-level directory
// (/Users, /private) or overlaps a path the profile grants for the
// system: writing there would let the process change what every sandbox
// reads, or reach far more than one run's files.
func checkWritable(what, path string) error {
	if strings.Count(path, "/") < 2 {
		return fmt.Errorf("%w: %s %q is a top-level directory", ErrInvalidPlan, what, path)
	}
	for _, list := range [][]string{systemRead, systemReadFiles, networkRead, systemCode, devices} {
		for _, sys := range list {
			if within(path, sys) || within(sys, path) {
				return fmt.Errorf("%w: %s %q overlaps the system path %s", ErrInvalidPlan, what, path, sys)
			}
		}
	}
	return nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// validate checks the plan's shape; it does not touch the file system.
func (p Plan) validate() error {
	if p.Program == "" {
		return fmt.Errorf("%w: empty program", ErrInvalidPlan)
	}
	for i, a := range p.ProgramArgs {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("%w: argument %d contains NUL", ErrInvalidPlan, i+1)
		}
	}
	// Errors never quote an environment value, which may be a secret.
	for i, kv := range p.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%w: environment entry %d is not KEY=VALUE", ErrInvalidPlan, i)
		}
		if strings.ContainsRune(kv, 0) {
			return fmt.Errorf("%w: environment variable %q contains NUL", ErrInvalidPlan, k)
		}
	}
	if p.Workspace == "" {
		return fmt.Errorf("%w: no workspace", ErrInvalidPlan)
	}
	if err := checkPaths("program", p.Program); err != nil {
		return err
	}
	if err := checkPaths("workspace", p.Workspace); err != nil {
		return err
	}
	if err := checkWritable("workspace", p.Workspace); err != nil {
		return err
	}
	if err := checkPaths("read-only path", p.ReadOnly...); err != nil {
		return err
	}
	if err := checkPaths("executable", p.Exec...); err != nil {
		return err
	}
	if p.TempDir != "" {
		if err := checkPaths("temporary directory", p.TempDir); err != nil {
			return err
		}
		if err := checkWritable("temporary directory", p.TempDir); err != nil {
			return err
		}
	}
	if p.Dir != "" {
		if err := checkPaths("working directory", p.Dir); err != nil {
			return err
		}
		if !within(p.Dir, p.Workspace) {
			return fmt.Errorf("%w: working directory %q is outside the workspace", ErrInvalidPlan, p.Dir)
		}
	}
	switch {
	case p.Network && (p.ProxyPort < 1 || p.ProxyPort > 65535):
		return fmt.Errorf("%w: network needs the egress proxy's port, got %d", ErrInvalidPlan, p.ProxyPort)
	case !p.Network && p.ProxyPort != 0:
		return fmt.Errorf("%w: a proxy port without network", ErrInvalidPlan)
	}
	return nil
}

// paths returns every host path the plan names, sorted, for CheckPaths.
func (p Plan) paths() []string {
	all := []string{p.Program, p.Workspace, p.dir()}
	if p.TempDir != "" {
		all = append(all, p.TempDir)
	}
	all = append(all, p.ReadOnly...)
	all = append(all, p.Exec...)
	slices.Sort(all)
	return slices.Compact(all)
}
