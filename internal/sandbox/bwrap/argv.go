//go:build linux

package bwrap

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/execledger/execledger/internal/sandbox/procinit"
)

// Mount is one entry of the sandbox's file system, for Enforcement.
type Mount struct {
	// Kind is ro-bind, bind, dev-bind, symlink, proc, dev, tmpfs or data
	// (a generated read-only file).
	Kind string `json:"kind"`
	// Source is the host path of a bind (or of a data file the Host's
	// skeleton holds) and a symlink's target.
	Source string `json:"source,omitempty"`
	Dest   string `json:"dest"`
	// inSkeleton marks a file of the Host's skeleton, there through the
	// bind of its directory and not an option of its own.
	inSkeleton bool
}

// hardening are the options every sandbox gets, before the mounts.
var hardening = []string{
	"--unshare-all",    // user, pid, mount, ipc, uts, net, cgroup
	"--unshare-user",   // required, not -try
	"--disable-userns", // no nested user namespaces
	"--die-with-parent",
	"--new-session", // no controlling terminal: TIOCSTI (CVE-2017-5226)
	"--cap-drop", "ALL",
	"--hostname", "sandbox",
	"--clearenv",
}

// mounts returns the file system in the order bwrap builds it.
func (p Plan) mounts(h *Host) []Mount {
	m := []Mount{{Kind: "ro-bind", Source: "/usr", Dest: "/usr"}}
	for _, r := range h.layout.roots {
		if r.symlink != "" {
			m = append(m, Mount{Kind: "symlink", Source: r.symlink, Dest: r.path})
		} else {
			m = append(m, Mount{Kind: "ro-bind", Source: r.path, Dest: r.path})
		}
	}
	if h.skel == "" {
		m = append(m, p.generatedMounts(h)...)
	} else {
		m = append(m, h.skeletonMounts()...)
	}
	m = append(m,
		Mount{Kind: "tmpfs", Dest: "/tmp"},
		Mount{Kind: "bind", Source: p.Workspace, Dest: WorkspaceDir},
	)
	for _, b := range p.ReadOnlyBinds {
		m = append(m, Mount{Kind: "ro-bind", Source: b, Dest: b})
	}
	if p.ProxySocket != "" {
		m = append(m, Mount{Kind: "ro-bind", Source: p.ProxySocket, Dest: ProxyPath})
	}
	return m
}

// generatedMounts are /etc, /proc and /dev without a skeleton: the host's
// allowlisted files, the generated ones from memfds, and bwrap's --dev.
func (p Plan) generatedMounts(h *Host) []Mount {
	var m []Mount
	for _, e := range h.layout.etc {
		m = append(m, Mount{Kind: "ro-bind", Source: e, Dest: e})
	}
	for _, g := range generatedEtc(p.ids()) {
		m = append(m, Mount{Kind: "data", Dest: g[0]})
	}
	return append(m, Mount{Kind: "proc", Dest: "/proc"}, Mount{Kind: "dev", Dest: "/dev"})
}

// skeletonMounts are /etc, /proc and /dev from h's skeleton (see Host).
func (h *Host) skeletonMounts() []Mount {
	m := []Mount{{Kind: "ro-bind", Source: h.skel + "/etc", Dest: "/etc"}}
	for _, g := range generatedEtc(h.uid, h.gid) {
		m = append(m, Mount{Kind: "data", Source: h.skel + g[0], Dest: g[0], inSkeleton: true})
	}
	for _, e := range h.layout.etc {
		m = append(m, Mount{Kind: "ro-bind", Source: e, Dest: e})
	}
	m = append(m,
		Mount{Kind: "proc", Dest: "/proc"},
		Mount{Kind: "ro-bind", Source: h.skel + "/dev", Dest: "/dev"},
	)
	for _, n := range devNodes {
		m = append(m, Mount{Kind: "dev-bind", Source: "/dev/" + n, Dest: "/dev/" + n})
	}
	for _, l := range devLinks {
		m = append(m, Mount{Kind: "symlink", Source: l[1], Dest: "/dev/" + l[0], inSkeleton: true})
	}
	return m
}

// argv is a built command line and the descriptors that go with it.
type argv struct {
	args []string
	// files are the child's descriptors in ExtraFiles order, fd 3 first:
	// the plan's ExtraFiles and ProgramFile, then made.
	files []*os.File
	// made are the files build opened for bwrap, closed once it has them.
	made []*os.File
	// info is the read end of --info-fd and block the write end of
	// --block-fd, when built with limits.
	info, block *os.File
}

// close releases everything build opened.
func (a *argv) close() {
	closeAll(a.made)
	closeAll([]*os.File{a.info, a.block})
}

// build assembles the argv for h, opening the descriptor files; with
// withLimits and limits in the plan, it adds the --info-fd/--block-fd
// exchange of Cmd.Start.
func (p Plan) build(h *Host, withLimits bool) (a *argv, err error) {
	a = &argv{}
	defer func() {
		if err != nil {
			a.close()
			a = nil
		}
	}()
	pass := func(f *os.File) string {
		a.files = append(a.files, f)
		return strconv.Itoa(2 + len(a.files)) // ExtraFiles[i] is fd 3+i
	}
	open := func(name string, data []byte) (string, error) {
		f, err := newMemfd(name, data)
		if err != nil {
			return "", err
		}
		a.made = append(a.made, f)
		return pass(f), nil
	}
	for _, f := range p.ExtraFiles {
		pass(f)
	}
	program := p.Program
	if p.ProgramFile != nil {
		program = procSelfFD + pass(p.ProgramFile)
	}

	args := append([]string(nil), hardening...)
	if p.Network {
		args = append(args, "--share-net")
	}
	uid, gid := p.ids()
	args = append(args, "--uid", strconv.FormatUint(uint64(uid), 10), "--gid", strconv.FormatUint(uint64(gid), 10))
	for _, kv := range p.env() {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	gen := generatedEtc(p.ids())
	for _, m := range p.mounts(h) {
		switch {
		case m.inSkeleton:
		case m.Kind == "data":
			var data string
			for _, g := range gen {
				if g[0] == m.Dest {
					data = g[1]
				}
			}
			fd, err := open(m.Dest[strings.LastIndexByte(m.Dest, '/')+1:], []byte(data))
			if err != nil {
				return nil, err
			}
			args = append(args, "--ro-bind-data", fd, m.Dest)
		case m.Kind == "proc" || m.Kind == "dev" || m.Kind == "tmpfs":
			args = append(args, "--"+m.Kind, m.Dest)
		default:
			args = append(args, "--"+m.Kind, m.Source, m.Dest)
		}
	}
	// The root itself is a tmpfs bwrap made; nothing may be added to it.
	args = append(args, "--remount-ro", "/", "--chdir", p.workdir())
	if p.Seccomp != nil {
		fd, err := open("seccomp", p.Seccomp.Bytes())
		if err != nil {
			return nil, err
		}
		args = append(args, "--seccomp", fd)
	}
	if withLimits && p.Limits != (procinit.Limits{}) {
		if args, err = a.exchange(args, pass); err != nil {
			return nil, err
		}
	}
	args = append(args, "--", program)
	a.args = append(args, p.ProgramArgs...)
	return a, nil
}

// exchange adds --info-fd and --block-fd: bwrap writes its pid 1's pid to
// the first and, after setting up the sandbox, waits for a byte on the
// second before it forks the program.
func (a *argv) exchange(args []string, pass func(*os.File) string) ([]string, error) {
	infoR, infoW, err := blockingPipe()
	if err != nil {
		return nil, fmt.Errorf("info pipe: %w", err)
	}
	a.info = infoR
	a.made = append(a.made, infoW)
	blockR, blockW, err := blockingPipe()
	if err != nil {
		return nil, fmt.Errorf("block pipe: %w", err)
	}
	a.block = blockW
	a.made = append(a.made, blockR)
	return append(args, "--info-fd", pass(infoW), "--block-fd", pass(blockR)), nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
