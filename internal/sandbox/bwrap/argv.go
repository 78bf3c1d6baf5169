package bwrap

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Mount is one entry of the sandbox's file system, for Enforcement.
type Mount struct {
	// Kind is ro-bind, bind, symlink, proc, dev, tmpfs or data (a
	// generated read-only file).
	Kind   string `json:"kind"`
	Source string `json:"source,omitempty"`
	Dest   string `json:"dest"`
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

// generated returns the files written into /etc instead of the host's.
func (p Plan) generated() [][2]string {
	uid, gid := p.ids()
	return [][2]string{
		{"/etc/passwd", fmt.Sprintf("sandbox:x:%d:%d:sandbox:%s:/usr/sbin/nologin\n", uid, gid, WorkspaceDir)},
		{"/etc/group", fmt.Sprintf("sandbox:x:%d:\n", gid)},
		{"/etc/hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n"},
	}
}

// mounts returns the file system in the order bwrap builds it.
func (p Plan) mounts(host hostLayout) []Mount {
	m := []Mount{{Kind: "ro-bind", Source: "/usr", Dest: "/usr"}}
	for _, r := range host.roots {
		if r.symlink != "" {
			m = append(m, Mount{Kind: "symlink", Source: r.symlink, Dest: r.path})
		} else {
			m = append(m, Mount{Kind: "ro-bind", Source: r.path, Dest: r.path})
		}
	}
	for _, e := range host.etc {
		m = append(m, Mount{Kind: "ro-bind", Source: e, Dest: e})
	}
	for _, g := range p.generated() {
		m = append(m, Mount{Kind: "data", Dest: g[0]})
	}
	m = append(m,
		Mount{Kind: "proc", Dest: "/proc"},
		Mount{Kind: "dev", Dest: "/dev"},
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

// build assembles the argv for host, opening the descriptor files.
func (p Plan) build(host hostLayout) (args []string, files []*os.File, err error) {
	defer func() {
		if err != nil {
			closeAll(files)
			files = nil
		}
	}()
	open := func(name string, data []byte) (string, error) {
		f, err := newMemfd(name, data)
		if err != nil {
			return "", err
		}
		files = append(files, f)
		return strconv.Itoa(2 + len(files)), nil // ExtraFiles[i] is fd 3+i
	}

	args = append(args, hardening...)
	if p.Network {
		args = append(args, "--share-net")
	}
	uid, gid := p.ids()
	args = append(args, "--uid", strconv.FormatUint(uint64(uid), 10), "--gid", strconv.FormatUint(uint64(gid), 10))
	for _, kv := range p.env() {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	gen := p.generated()
	for _, m := range p.mounts(host) {
		switch m.Kind {
		case "data":
			var data string
			for _, g := range gen {
				if g[0] == m.Dest {
					data = g[1]
				}
			}
			fd, err := open(m.Dest[strings.LastIndexByte(m.Dest, '/')+1:], []byte(data))
			if err != nil {
				return nil, nil, err
			}
			args = append(args, "--ro-bind-data", fd, m.Dest)
		case "proc", "dev", "tmpfs":
			args = append(args, "--"+m.Kind, m.Dest)
		default:
			args = append(args, "--"+m.Kind, m.Source, m.Dest)
		}
	}
	// The root itself is a tmpfs bwrap made; nothing may be added to it.
	args = append(args, "--remount-ro", "/", "--chdir", WorkspaceDir)
	if p.Seccomp != nil {
		fd, err := open("seccomp", p.Seccomp.Bytes())
		if err != nil {
			return nil, nil, err
		}
		args = append(args, "--seccomp", fd)
	}
	args = append(args, "--", p.Program)
	return append(args, p.ProgramArgs...), files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
