package procinit

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestBridgeRelaysTargetToSocket: a client in the target reaches the Unix
// socket through the init's listener, and the listener closes with the init.
func TestBridgeRelaysTargetToSocket(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is required (apt-get install -y curl): %v", err)
	}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			seen <- err.Error()
			return
		}
		seen <- req.Method + " " + req.RequestURI
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nbridged\n")
	}()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	spec := Spec{Path: curl, Args: []string{"-sS", "--max-time", "120", "http://example.test/x"},
		Env: []string{"http_proxy=http://" + listen}, Bridge: &Bridge{Listen: listen, Socket: sock}}
	r := runInit(t, spec)
	if r.code != 0 || r.stdout != "bridged\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	select {
	case s := <-seen:
		if s != "GET http://example.test/x" {
			t.Errorf("proxy socket saw %q", s)
		}
	case <-time.After(waitLong):
		t.Fatal("the proxy socket saw no request")
	}
	if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		c.Close()
		t.Errorf("the bridge still listens on %s after the init exited", listen)
	}
}

func TestBridgeSpecChecked(t *testing.T) {
	t.Parallel()
	bad := map[string]Spec{
		"no port":         {Path: "/bin/true", Bridge: &Bridge{Listen: "127.0.0.1", Socket: "/run/egress.sock"}},
		"name":            {Path: "/bin/true", Bridge: &Bridge{Listen: "localhost:3128", Socket: "/run/egress.sock"}},
		"relative socket": {Path: "/bin/true", Bridge: &Bridge{Listen: "127.0.0.1:3128", Socket: "egress.sock"}},
		"with seccomp":    {Path: "/bin/true", Seccomp: true, Bridge: &Bridge{Listen: "127.0.0.1:3128", Socket: "/run/egress.sock"}},
	}
	for name, spec := range bad {
		if f, err := SpecFile(spec); err == nil || !strings.Contains(err.Error(), "invalid sandbox init spec") {
			if f != nil {
				f.Close()
			}
			t.Errorf("%s: SpecFile error = %v", name, err)
		}
	}
}

// TestApplyToAnotherProcess sets limits on a running process from outside,
// as tier C does to bubblewrap's pid 1.
func TestApplyToAnotherProcess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lim := Limits{CPUSeconds: 7, FileSize: 1 << 20, OpenFiles: 8, Processes: 99}
	if err := lim.ApplyTo(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cat", fmt.Sprintf("/proc/%d/limits", cmd.Process.Pid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := limitsOf(string(out))
	want := map[string]string{"Max cpu time": "7 7", "Max file size": "1048576 1048576",
		"Max open files": "16 16", "Max processes": "99 99", "Max core file size": "0 0"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if err := lim.ApplyTo(1 << 30); err == nil {
		t.Error("ApplyTo a pid that does not exist succeeded")
	}
}
