//go:build linux

package bwrap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Probe reports whether bubblewrap can make a sandbox here: it runs
// /bin/true (or true from PATH) in the namespaces tier C unshares, as
// Nobody when the caller is root (as tier C runs bwrap then). Available
// only finds the binary; a container without user namespaces has one
// that cannot start any sandbox.
func Probe(ctx context.Context) error {
	path, _, err := Available()
	if err != nil {
		return err
	}
	prog, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("%w: no true program to probe with: %v", ErrUnavailable, err)
	}
	cmd := exec.CommandContext(ctx, path, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
		"--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", prog)
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s cannot make a sandbox here: %v: %s", ErrUnavailable, path, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
