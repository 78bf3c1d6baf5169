//go:build linux

package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/execledger/execledger/internal/sandbox/procinit"
	"github.com/execledger/execledger/internal/seccomp"
)

// Paths inside the sandbox.
const (
	WorkspaceDir = "/workspace"
	ProxyPath    = "/run/egress.sock"
)

// procSelfFD is where a descriptor of the program's appears inside the
// sandbox, under the sandbox's own /proc.
const procSelfFD = "/proc/self/fd/"

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
	// With ProgramFile it is only the name the plan records.
	Program string
	// ProgramFile, when not nil, is the executable instead: a file opened
	// for reading and passed to the sandbox, which bwrap executes as
	// /proc/self/fd/N. Neither the file's host path nor the sandbox's
	// right to search it matter (its mode must let the sandbox's uid
	// execute it), and no mount shows it. The program inherits the
	// descriptor. It stays the caller's to close.
	ProgramFile *os.File
	// ProgramArgs are its arguments, without argv[0].
	ProgramArgs []string
	// ExtraFiles are passed to the program as descriptors 3, 4, ... in
	// order, as exec.Cmd's ExtraFiles; bwrap's own descriptors follow them
	// and are closed before the program starts. They stay the caller's to
	// close (after Start).
	ExtraFiles []*os.File
	// Env is the whole environment, as KEY=VALUE; bwrap clears its own
	// first. PATH defaults to DefaultPath.
	Env []string
	// Workspace is a host directory bound read-write at /workspace.
	Workspace string
	// Dir is where the process starts: WorkspaceDir or a directory below
	// it, as a clean absolute path inside the sandbox; "" means
	// WorkspaceDir.
	Dir string
	// ReadOnlyBinds are extra host paths bound read-only at the same path.
	ReadOnlyBinds []string
	// Network shares the host's network namespace; false leaves only lo.
	Network bool
	// ProxySocket is a host Unix socket bound at /run/egress.sock, for
	// strict egress through a host proxy; "" binds none.
	ProxySocket string
	// UID and GID inside the sandbox; 0 means Nobody.
	UID, GID uint32
	// HostUID and HostGID, when not 0, are the credentials bwrap itself
	// runs under (the caller must be root, or already be that uid):
	// bubblewrap maps the sandbox's uid to the uid that starts it, so the
	// sandbox's processes and the files they create belong on the host to
	// HostUID instead of to the caller. A root caller should set them:
	// otherwise the sandbox is host uid 0, which RLIMIT_NPROC exempts, and
	// a user namespace mapped to root is one mistake away from root's
	// files. bwrap then needs search permission, as HostUID, on the host
	// paths it binds (the workspace, ReadOnlyBinds, ProxySocket), and the
	// workspace must be writable by HostUID.
	HostUID, HostGID uint32
	// Limits are the sandbox's rlimits. Command's Cmd sets them with
	// prlimit(2) on bwrap's pid 1 while bwrap waits on --block-fd, before
	// pid 1 forks the program: every process in the sandbox inherits them
	// (see Cmd.Start). A zero value sets none, not even RLIMIT_CORE, and
	// skips the exchange.
	Limits procinit.Limits
	// Seccomp, when not nil, is installed by bwrap via --seccomp FD.
	Seccomp *seccomp.Filter
	// Host, when not nil, is what NewHost prepared: the plan then uses its
	// bwrap and host layout instead of looking them up, and gets /etc and
	// /dev from its skeleton (see Host). Its uid and gid must be the
	// plan's, and ReadOnlyBinds may not be in /etc, which is read-only.
	Host *Host
}

// workdir returns Dir with its default applied.
func (p Plan) workdir() string {
	if p.Dir == "" {
		return WorkspaceDir
	}
	return p.Dir
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
	if (p.Program == "" && p.ProgramFile == nil) || strings.ContainsRune(p.Program, 0) {
		return fmt.Errorf("%w: empty program", ErrInvalidPlan)
	}
	if d := p.workdir(); filepath.Clean(d) != d || !within(d, WorkspaceDir) || strings.ContainsRune(d, 0) {
		return fmt.Errorf("%w: working directory %q is not %s or a clean path below it", ErrInvalidPlan, d, WorkspaceDir)
	}
	for _, f := range p.ExtraFiles {
		if f == nil {
			return fmt.Errorf("%w: nil extra file", ErrInvalidPlan)
		}
	}
	if (p.HostUID == 0) != (p.HostGID == 0) {
		return fmt.Errorf("%w: HostUID and HostGID must be set together", ErrInvalidPlan)
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
	return p.validateHost()
}

// validateHost checks the plan against its Host.
func (p Plan) validateHost() error {
	if p.Host == nil {
		return nil
	}
	if uid, gid := p.ids(); uid != p.Host.uid || gid != p.Host.gid {
		return fmt.Errorf("%w: the plan runs as %d:%d, its Host's skeleton is for %d:%d", ErrInvalidPlan, uid, gid, p.Host.uid, p.Host.gid)
	}
	for _, b := range p.ReadOnlyBinds {
		if within(b, "/etc") {
			return fmt.Errorf("%w: read-only bind %q is in /etc, which comes from the Host's skeleton", ErrInvalidPlan, b)
		}
	}
	return nil
}

// Args returns bwrap's argv (without the binary) and the files it reads
// from descriptors, in ExtraFiles order: fd 3 is the first. The plan's own
// ExtraFiles and ProgramFile lead and stay the caller's; the files after
// them are sealed memfds Args made, which the caller closes once bwrap has
// started. Args leaves Limits out: they need the exchange of Command's Cmd.
func (p Plan) Args() (args []string, files []*os.File, err error) {
	a, err := p.argv(false)
	if err != nil {
		return nil, nil, err
	}
	return a.args, a.files, nil
}

// argv validates the plan and builds it for its Host, or for the running
// host as probed now.
func (p Plan) argv(withLimits bool) (*argv, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	h, err := p.host()
	if err != nil {
		return nil, err
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	return p.build(h, withLimits)
}

// host returns the plan's Host, or one without a skeleton holding the
// host's layout as probed now.
func (p Plan) host() (*Host, error) {
	if p.Host != nil {
		return p.Host, nil
	}
	layout, err := probeHost()
	if err != nil {
		return nil, err
	}
	return &Host{layout: layout}, nil
}
