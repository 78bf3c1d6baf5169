//go:build unix

package pgcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// runner is the identity the PostgreSQL binaries run as. When the process is
// root it is an unprivileged user (initdb and postgres refuse to run as root)
// and commands get that user's credentials; otherwise it is the current user.
type runner struct {
	name       string
	uid        int
	gid        int
	groups     []int // supplementary groups of the user
	home       string
	switchUser bool // true when the process is root and commands must switch to uid/gid
}

// newRunner resolves the identity. runAs is only used when running as root;
// "" means "postgres" if that user exists, else "nobody".
func newRunner(runAs string) (runner, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil { // e.g. a container uid without a passwd entry
			u = &user.User{Uid: strconv.Itoa(os.Getuid()), Gid: strconv.Itoa(os.Getgid()), Username: strconv.Itoa(os.Getuid()), HomeDir: os.Getenv("HOME")}
		}
		return runnerFor(u, false)
	}
	if runAs == "" {
		runAs = "nobody"
		if _, err := user.Lookup("postgres"); err == nil {
			runAs = "postgres"
		}
	}
	u, err := user.Lookup(runAs)
	if err != nil {
		return runner{}, fmt.Errorf("pgcluster: look up run-as user %q: %w", runAs, err)
	}
	r, err := runnerFor(u, true)
	if err != nil {
		return runner{}, err
	}
	if r.uid == 0 {
		return runner{}, fmt.Errorf("pgcluster: run-as user %q is root; PostgreSQL refuses to run as root", runAs)
	}
	return r, nil
}

func runnerFor(u *user.User, switchUser bool) (runner, error) {
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return runner{}, fmt.Errorf("pgcluster: user %s has non-numeric uid %q", u.Username, u.Uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return runner{}, fmt.Errorf("pgcluster: user %s has non-numeric gid %q", u.Username, u.Gid)
	}
	r := runner{name: u.Username, uid: uid, gid: gid, home: u.HomeDir, switchUser: switchUser}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.Atoi(s); err == nil && g != gid {
				r.groups = append(r.groups, g)
			}
		}
	}
	if fi, err := os.Stat(r.home); err != nil || !fi.IsDir() {
		r.home = "/" // e.g. nobody's /nonexistent
	}
	return r, nil
}

// env is the clean environment for PostgreSQL commands: nothing inherited
// (no PGDATA, PGPORT, LC_* surprises), binDir first on PATH.
func (r runner) env(binDir string) []string {
	return []string{
		"HOME=" + r.home,
		"USER=" + r.name,
		"LOGNAME=" + r.name,
		"PATH=" + binDir + ":/usr/local/bin:/usr/bin:/bin",
		"LANG=C",
		"LC_ALL=C",
	}
}

// command builds a command that runs as the runner's user with a clean
// environment, from "/" (the caller's working directory may not be
// accessible to that user), in its own process group so that a terminal's
// Ctrl-C reaches only us and we decide how PostgreSQL shuts down. When ctx
// is canceled the command gets SIGINT (initdb cleans up after itself on it)
// and SIGKILL 10 seconds later.
func (r runner) command(ctx context.Context, b binaries, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.path(name), args...)
	cmd.Env = r.env(b.dir)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r.switchUser {
		groups := make([]uint32, len(r.groups))
		for i, g := range r.groups {
			groups[i] = uint32(g)
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), Groups: groups}
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// chown gives path to the runner's user (only when switching users).
func (r runner) chown(path string) error {
	if !r.switchUser {
		return nil
	}
	if err := os.Lchown(path, r.uid, r.gid); err != nil {
		return fmt.Errorf("pgcluster: chown %s to %s: %w", path, r.name, err)
	}
	return nil
}
