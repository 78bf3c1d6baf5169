package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/execledger/execledger/internal/seccomp"
)

// Paths inside the sandbox.
const (
	WorkspaceDir = "/workspace"
	ProxyPath    = "/run/egress.sock"
)

// Nobody is the default uid and gid inside the sandbox.
const Nobody = 65534

// DefaultPath is PATH inside the sandbox when Env does not set one.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// ErrInvalidPlan is wrapped by every error a malformed Plan produces.
var ErrInvalidPlan = errors.New("invalid sandbox plan")

// Plan is one tier C execution.
//
// Program and ProgramArgs are the brief's Command and Args fields, renamed
// because Go does not allow a field and a method of the same name.
type Plan struct {
	// Program is the executable, resolved with PATH inside the sandbox.
	Program string
	// ProgramArgs are its arguments, without argv[0].
	ProgramArgs []string
	// Env is the whole environment, as KEY=VALUE; bwrap clears its own
	// first. PATH defaults to DefaultPath.
	Env []string
	// Workspace is a host directory bound read-write at /workspace, where
	// the process starts.
	Workspace string
	// ReadOnlyBinds are extra host paths bound read-only at the same path.
	ReadOnlyBinds []string
	// Network shares the host's network namespace; false leaves only lo.
	Network bool
	// ProxySocket is a host Unix socket bound at /run/egress.sock, for
	// strict egress through a host proxy; "" binds none.
	ProxySocket string
	// UID and GID inside the sandbox; 0 means Nobody.
	UID, GID uint32
	// Seccomp, when not nil, is installed by bwrap via --seccomp FD.
	Seccomp *seccomp.Filter
}

// ids returns the uid and gid with defaults applied.
func (p Plan) ids() (uid, gid uint32) {
	uid, gid = p.UID, p.GID
	if uid == 0 {
		uid = Nobody
	}
	if gid == 0 {
		gid = Nobody
	}
	return uid, gid
}

// env returns Env with PATH defaulted.
func (p Plan) env() []string {
	for _, kv := range p.Env {
		if strings.HasPrefix(kv, "PATH=") {
			return p.Env
		}
	}
	return append([]string{"PATH=" + DefaultPath}, p.Env...)
}

// deniedBindRoots are host trees a bind may neither be in nor contain:
// kernel interfaces and the directories where daemons keep their sockets
// (the host's Postgres among them).
var deniedBindRoots = []string{"/proc", "/sys", "/dev", "/run", "/var/run", "/root", "/etc/shadow", "/etc/gshadow"}

// checkHostPath rejects a host path that is relative, unclean, the root, or
// overlaps a denied tree.
func checkHostPath(what, path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsRune(path, 0) {
		return fmt.Errorf("%w: %s %q must be a clean absolute path", ErrInvalidPlan, what, path)
	}
	if path == "/" {
		return fmt.Errorf("%w: %s may not be the host root", ErrInvalidPlan, what)
	}
	for _, root := range deniedBindRoots {
		if within(path, root) || within(root, path) {
			return fmt.Errorf("%w: %s %q overlaps %s", ErrInvalidPlan, what, path, root)
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
	if p.Program == "" || strings.ContainsRune(p.Program, 0) {
		return fmt.Errorf("%w: empty program", ErrInvalidPlan)
	}
	for _, a := range p.ProgramArgs {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("%w: argument contains NUL", ErrInvalidPlan)
		}
	}
	for _, kv := range p.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("%w: environment entry %q is not KEY=VALUE", ErrInvalidPlan, kv)
		}
	}
	if p.Workspace == "" {
		return fmt.Errorf("%w: no workspace", ErrInvalidPlan)
	}
	if err := checkHostPath("workspace", p.Workspace); err != nil {
		return err
	}
	for _, b := range p.ReadOnlyBinds {
		if err := checkHostPath("read-only bind", b); err != nil {
			return err
		}
	}
	if p.ProxySocket != "" && (!filepath.IsAbs(p.ProxySocket) || strings.ContainsRune(p.ProxySocket, 0)) {
		return fmt.Errorf("%w: proxy socket %q must be an absolute path", ErrInvalidPlan, p.ProxySocket)
	}
	return nil
}

// Args returns bwrap's argv (without the binary) and the files it reads
// from descriptors, in ExtraFiles order: fd 3 is the first. The files are
// sealed memfds; the caller closes them once bwrap has started.
func (p Plan) Args() (args []string, files []*os.File, err error) {
	if err := p.validate(); err != nil {
		return nil, nil, err
	}
	host, err := probeHost()
	if err != nil {
		return nil, nil, err
	}
	return p.build(host)
}
