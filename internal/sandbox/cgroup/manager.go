//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped by Open's errors when there is no cgroup2
// hierarchy this process can use.
var ErrUnavailable = errors.New("cgroup v2 is unavailable")

// ErrInvalidName is wrapped by the errors of a bad Options.Name,
// Options.Path or leaf name.
var ErrInvalidName = errors.New("invalid cgroup name")

// DefaultName is the parent directory's name of a zero Options.Name.
const DefaultName = "execledger"

// maxName bounds Options.Name and leaf names.
const maxName = 64

// Controllers this package enables and limits, in the order it records
// them.
var wanted = []string{"cpu", "memory", "pids"}

// Kill mechanisms, as Group.Record reports them.
const (
	// KillFile writes 1 to cgroup.kill.
	KillFile = "cgroup.kill"
	// KillFreeze freezes the cgroup, SIGKILLs each process, thaws it.
	KillFreeze = "cgroup.freeze+sigkill"
	// KillSignal SIGKILLs each process until none is left.
	KillSignal = "sigkill"
)

// Options configure Open. The zero value is the usual configuration.
type Options struct {
	// Name is the parent directory below the caller's own cgroup;
	// DefaultName when empty. Letters, digits, '-' and '_' only.
	Name string
	// Path, when set, is the parent directory as a cgroup path (relative
	// to the cgroup2 mount's root, e.g.
	// "/system.slice/execledger.service/sandboxes"), used instead of
	// <own cgroup>/<Name>. Its parent must exist.
	Path string
	// MountInfo and ProcCgroup are the files Open reads to find the
	// cgroup2 mount and the caller's own cgroup: /proc/self/mountinfo and
	// /proc/self/cgroup when empty.
	MountInfo, ProcCgroup string
}

func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.MountInfo == "" {
		o.MountInfo = "/proc/self/mountinfo"
	}
	if o.ProcCgroup == "" {
		o.ProcCgroup = "/proc/self/cgroup"
	}
	if err := validName(o.Name); err != nil {
		return o, err
	}
	if o.Path != "" {
		if !path.IsAbs(o.Path) || path.Clean(o.Path) != o.Path || o.Path == "/" {
			return o, fmt.Errorf("%w: path %q is not a clean absolute cgroup path below the root", ErrInvalidName, o.Path)
		}
		for _, c := range strings.Split(o.Path[1:], "/") {
			if c == "." || c == ".." || len(c) > 255 || strings.ContainsRune(c, 0) {
				return o, fmt.Errorf("%w: path %q", ErrInvalidName, o.Path)
			}
		}
	}
	return o, nil
}

// validName checks a directory name this package makes: 1 to maxName
// letters, digits, '-' and '_'. That leaves out '/', "..", and the dots of
// the interface files (cgroup.procs, memory.max) a child could collide
// with.
func validName(s string) error {
	if s == "" || len(s) > maxName {
		return fmt.Errorf("%w: %q must have 1 to %d characters", ErrInvalidName, s, maxName)
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: %q may hold only letters, digits, '-' and '_'", ErrInvalidName, s)
		}
	}
	return nil
}

// Manager makes and removes this process's leaves below one parent
// directory, and sweeps the leaves of dead owners there. It is safe for
// concurrent use.
type Manager struct {
	mnt     mount
	root    string // the parent directory, absolute
	self    owner
	ctrl    []string          // enabled for leaves
	missing map[string]string // controller -> why it is not enabled
	kill    string

	mu     sync.Mutex
	leaves int // open Groups
}

// Open finds the cgroup2 hierarchy, makes the parent directory if needed
// and enables the memory, pids and cpu controllers for it where they are
// offered. It makes no owner directory: New does. Errors when there is no
// usable cgroup2 hierarchy wrap ErrUnavailable.
func Open(opts Options) (*Manager, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	release, err := kernelRelease()
	if err != nil {
		return nil, fmt.Errorf("%w: uname: %v", ErrUnavailable, err)
	}
	if err := checkKernel(release); err != nil {
		return nil, err
	}
	mnt, selfDir, err := locate(opts.MountInfo, opts.ProcCgroup)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(selfDir, opts.Name)
	if opts.Path != "" {
		root = filepath.Join(mnt.dir, opts.Path)
	}
	base := filepath.Dir(root)
	if !isCgroup2(base) {
		return nil, fmt.Errorf("%w: %s is not a cgroup2 directory", ErrUnavailable, base)
	}
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := unix.Access(root, unix.W_OK|unix.X_OK); err != nil {
		return nil, fmt.Errorf("%w: %s is not writable: %v", ErrUnavailable, root, err)
	}
	me, err := self()
	if err != nil {
		return nil, fmt.Errorf("cgroup: our own identity: %w", err)
	}
	m := &Manager{mnt: mnt, root: root, self: me, missing: map[string]string{}, kill: killMechanism(root)}
	m.enableControllers(base)
	return m, nil
}

// enableControllers enables each wanted controller that base offers in
// base's and the parent's cgroup.subtree_control, and records why the
// others are missing.
func (m *Manager) enableControllers(base string) {
	offered, err := readWords(base, "cgroup.controllers")
	if err != nil {
		for _, c := range wanted {
			m.missing[c] = err.Error()
		}
		return
	}
	for _, c := range wanted {
		if !slices.Contains(offered, c) {
			m.missing[c] = "not offered by " + filepath.Join(base, "cgroup.controllers")
			continue
		}
		if err := enable(base, c); err != nil {
			m.missing[c] = err.Error()
			continue
		}
		if err := enable(m.root, c); err != nil {
			m.missing[c] = err.Error()
			continue
		}
		m.ctrl = append(m.ctrl, c)
	}
}

// enable turns controller c on in dir's cgroup.subtree_control unless it
// is on already.
func enable(dir, c string) error {
	on, err := readWords(dir, "cgroup.subtree_control")
	if err != nil {
		return err
	}
	if slices.Contains(on, c) {
		return nil
	}
	err = writeFile(dir, "cgroup.subtree_control", "+"+c)
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("enable %s in %s: %w (that cgroup holds processes; see the package documentation)", c, dir, err)
	}
	return err
}

// killMechanism is the best kill the kernel offers below root, a non-root
// cgroup, which has every interface file a leaf would.
func killMechanism(root string) string {
	if _, err := os.Stat(filepath.Join(root, "cgroup.kill")); err == nil {
		return KillFile
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.freeze")); err == nil {
		return KillFreeze
	}
	return KillSignal
}

// Path is the parent directory.
func (m *Manager) Path() string { return m.root }

// Owner is this process's owner directory (it exists only while a leaf
// does).
func (m *Manager) Owner() string { return filepath.Join(m.root, m.self.dirName()) }

// Controllers lists the controllers (of cpu, memory and pids) enabled for
// leaves.
func (m *Manager) Controllers() []string { return slices.Clone(m.ctrl) }

// MissingControllers says, for each of cpu, memory and pids that leaves do
// not get, why.
func (m *Manager) MissingControllers() map[string]string {
	out := make(map[string]string, len(m.missing))
	for k, v := range m.missing {
		out[k] = v
	}
	return out
}

// KillMechanism is KillFile, KillFreeze or KillSignal.
func (m *Manager) KillMechanism() string { return m.kill }

// cgroupPath is dir, a directory of the mount, as the cgroup path
// /proc/<pid>/cgroup shows.
func (m *Manager) cgroupPath(dir string) string {
	rel, err := filepath.Rel(m.mnt.dir, dir)
	if err != nil {
		return dir
	}
	return path.Join(m.mnt.root, "/"+rel)
}

// New makes the leaf name in this process's owner directory, making that
// directory if needed, and sets l on it for the controllers it has. A limit
// whose controller is missing is skipped (Group.Record lists it); a limit
// the kernel refuses fails New. The caller removes the Group.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.mkLeaf(name)
	if err != nil {
		return nil, err
	}
	g := &Group{m: m, name: name, dir: dir, fd: -1, kill: m.kill, applied: map[string]string{}, skipped: map[string]string{}}
	if err := g.open(l); err != nil {
		g.closeFD()
		_ = rmdir(dir)
		m.ownerIdle()
		return nil, err
	}
	m.leaves++
	return g, nil
}

// mkLeaf makes the leaf directory. Another Manager of this process may
// remove the shared owner directory between our mkdirs: retry then.
func (m *Manager) mkLeaf(name string) (string, error) {
	owner := m.Owner()
	dir := filepath.Join(owner, name)
	for attempt := 0; ; attempt++ {
		if err := m.ensureOwner(owner); err != nil {
			return "", err
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			return "", fmt.Errorf("cgroup: make leaf: %w", err)
		}
	}
}

// ensureOwner makes the owner directory and enables the controllers in it.
func (m *Manager) ensureOwner(owner string) error {
	if err := os.Mkdir(owner, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cgroup: make owner directory: %w", err)
	}
	for _, c := range m.ctrl {
		if err := enable(owner, c); err != nil {
			return fmt.Errorf("cgroup: owner directory: %w", err)
		}
	}
	return nil
}

// leafGone is called by Group.Remove.
func (m *Manager) leafGone() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leaves--
	m.ownerIdle()
}

// ownerIdle removes the owner directory when this Manager has no leaf
// left. The directory stays while another Manager of this process has
// leaves in it (EBUSY); m.mu is held.
func (m *Manager) ownerIdle() {
	if m.leaves == 0 {
		_ = unix.Rmdir(m.Owner())
	}
}

// Close removes this process's owner directory if it is empty. It fails
// while Groups are still open: their leaves stay for Sweep to find once
// this process has exited.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leaves > 0 {
		return fmt.Errorf("cgroup: Close with %d leaves still open", m.leaves)
	}
	m.ownerIdle()
	return nil
}
