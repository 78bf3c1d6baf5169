package egress

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"
)

// staleProbeTimeout bounds the check that an existing socket is dead.
const staleProbeTimeout = 200 * time.Millisecond

// ListenUnix creates a Unix socket listener at path for Serve. A stale
// socket left by a dead proxy is removed first; a socket some process still
// serves, or a path that is not a socket, fails with ErrSocketInUse.
//
// The socket is made mode 0666: the sandboxed process runs under an
// unprivileged uid (65534) that must be able to connect, and a Unix socket's
// mode is the only access check on connect. Access control is therefore the
// path: put the socket in a directory only the daemon can traverse (0700 or
// 0711 with an unguessable name) and bind-mount it into the one sandbox it
// serves. The socket file is removed when the listener is closed.
func (p *Proxy) ListenUnix(path string) (net.Listener, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("egress: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: chmod %s: %w", path, err)
	}
	return ln, nil
}

// removeStale removes a socket at path that nobody is listening on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("egress: stat %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("egress: %s exists and is not a socket: %w", path, ErrSocketInUse)
	}
	if c, err := net.DialTimeout("unix", path, staleProbeTimeout); err == nil {
		c.Close()
		return fmt.Errorf("egress: %s: %w", path, ErrSocketInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("egress: remove stale socket %s: %w", path, err)
	}
	return nil
}
