package bwrap

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDevMinimal: with a Host, /dev holds the five harmless devices, the
// descriptor symlinks and shm, and nothing else; it is read-only, and the
// devices work.
func TestDevMinimal(t *testing.T) {
	p := newPlan(t, `
echo "list: $(ls -A /dev | tr '\n' ' ')"
for d in null zero full random urandom; do test -c /dev/$d && echo "char $d"; done
cat /dev/null && echo "read null"
echo "urandom $(head -c 10 /dev/urandom | wc -c)"
echo "random $(head -c 10 /dev/random | wc -c)"
echo "zero $(head -c 4 /dev/zero | od -An -tx1 | tr -d ' ')"
echo x > /dev/null && echo "wrote null"
(echo x > /dev/full) 2>/dev/null || echo "full refused"
echo "out" > /dev/stdout
echo "in" | cat /dev/stdin
echo "fd $(ls /dev/fd/ | tr '\n' ' ')"
echo shm > /dev/shm/s && echo "shm in $(cat /tmp/s)"
(touch /dev/x) 2>/dev/null || echo "dev read-only"
test -e /dev/tty || echo "no tty"
sed 's/^/mount /' /proc/self/mountinfo
`)
	h := p.Host
	out := run(t, p)
	t.Logf("\n%s", out)
	for _, want := range []string{
		"list: fd full null random shm stderr stdin stdout urandom zero \n",
		"char null\nchar zero\nchar full\nchar random\nchar urandom\n",
		"read null\n", "urandom 10\n", "random 10\n", "zero 00000000\n", "wrote null\n", "full refused\n",
		"out\n", "in\n", "shm in shm\n", "dev read-only\n", "no tty\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	var mounts []string
	for _, line := range strings.Split(out, "\n") {
		// mount ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS] - FSTYPE ...
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 7 || f[0] != "mount" || sep < 0 || sep+1 >= len(f) || !within(f[5], "/dev") {
			continue
		}
		root, point, opts, fstype := f[4], f[5], f[6], f[sep+1]
		mounts = append(mounts, point)
		switch {
		case point == "/dev":
			if root != h.Dir()+"/dev" || !strings.HasPrefix(opts, "ro,") {
				t.Errorf("/dev is not the skeleton's, read-only: %s", line)
			}
		case root != strings.TrimPrefix(point, "/dev") || fstype != "devtmpfs":
			t.Errorf("%s is not the host's device of that name: %s", point, line)
		}
	}
	if want := []string{"/dev", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}; !slices.Equal(mounts, want) {
		t.Errorf("mounts in /dev: %v, want %v", mounts, want)
	}
}

// TestEtcFromSkeleton: with a Host, /etc holds the generated files and the
// host's allowlisted ones, current, and is read-only.
func TestEtcFromSkeleton(t *testing.T) {
	h := newHost(t)
	p := newPlan(t, `ls -A /etc /etc/ssl /etc/ssl/certs | tr '\n' ' '; echo; for f in `+strings.Join(h.layout.etc, " ")+`; do echo "$f $(wc -c < $f)"; done; cat /etc/group /etc/hosts`)
	p.Host = h
	out := run(t, p)
	t.Logf("\n%s", out)
	names := []string{"group", "hosts", "passwd"}
	for _, e := range h.layout.etc {
		if strings.Count(e, "/") == 2 {
			names = append(names, filepath.Base(e))
		}
	}
	if slices.Contains(h.layout.etc, "/etc/ssl/certs/ca-certificates.crt") {
		names = append(names, "ssl")
	}
	slices.Sort(names)
	if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, "/etc: "+strings.Join(names, " ")+"  ") {
		t.Errorf("/etc lists %q, want %v", first, names)
	}
	for _, e := range h.layout.etc {
		fi, err := os.Stat(e)
		if err != nil {
			t.Fatal(err)
		}
		if want := e + " " + itoa(fi.Size()) + "\n"; !strings.Contains(out, want) {
			t.Errorf("output lacks %q: the host's file is not bound on the placeholder", want)
		}
	}
	if !strings.Contains(out, "sandbox:x:65534:\n127.0.0.1\tlocalhost sandbox\n") {
		t.Error("group or hosts is not the generated one")
	}
}

// TestProbedLayout: a plan without a Host probes the host and gets the
// generated /etc and bwrap's --dev, as before Hosts.
func TestProbedLayout(t *testing.T) {
	p := newPlan(t, `cat /etc/passwd; test -d /dev/pts && echo devpts; ls /etc | tr '\n' ' '`)
	p.Host = nil
	out := run(t, p)
	t.Logf("\n%s", out)
	if !strings.Contains(out, "sandbox:x:65534:65534:") || !strings.Contains(out, "devpts\n") || !strings.Contains(out, "hosts") {
		t.Errorf("output %q", out)
	}
	if ms := p.Enforcement()["mounts"].([]Mount); !slices.Contains(ms, Mount{Kind: "dev", Dest: "/dev"}) {
		t.Errorf("mounts %v lack bwrap's --dev", ms)
	}
}

// TestSkeletonShared: Hosts for the same ids share one skeleton, written
// with the same modes whatever the umask; other ids get another.
func TestSkeletonShared(t *testing.T) {
	base := filepath.Join(t.TempDir(), "skel")
	old := syscall.Umask(0o077)
	a, err := NewHost(base, 0, 0)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	b := newHostIn(t, base, Nobody, Nobody)
	c := newHostIn(t, base, 1000, 1000)
	if a.Dir() != b.Dir() || a.Dir() == c.Dir() || filepath.Dir(a.Dir()) != base {
		t.Errorf("skeletons %s, %s, %s", a.Dir(), b.Dir(), c.Dir())
	}
	fi, err := os.Stat(base)
	if err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("base: %v %v", fi.Mode(), err)
	}
	err = filepath.WalkDir(a.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch want := fs.FileMode(0o444); {
		case d.IsDir():
			want = 0o755
			fallthrough
		case fi.Mode().IsRegular():
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if passwd, err := os.ReadFile(filepath.Join(c.Dir(), "etc/passwd")); err != nil || !strings.Contains(string(passwd), ":1000:1000:") {
		t.Errorf("passwd for 1000: %q %v", passwd, err)
	}
}

// TestSkeletonRepaired: a skeleton that is gone (with its base), lost
// files or gained one is written again, by the per-call check or NewHost.
func TestSkeletonRepaired(t *testing.T) {
	base := filepath.Join(t.TempDir(), "skel")
	h := newHostIn(t, base, 0, 0)
	if err := os.RemoveAll(base); err != nil {
		t.Fatal(err)
	}
	if err := h.check(); err != nil {
		t.Fatal(err)
	}
	if err := complete(h.Dir(), h.entries()); err != nil {
		t.Errorf("after check: %v", err)
	}
	if err := os.Remove(filepath.Join(h.Dir(), "dev/null")); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(h.Dir(), "etc/shadow")
	if err := os.WriteFile(planted, []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	h = newHostIn(t, base, 0, 0)
	if err := complete(h.Dir(), h.entries()); err != nil {
		t.Errorf("after NewHost: %v", err)
	}
	if _, err := os.Lstat(planted); err == nil {
		t.Error("a file planted in the skeleton survived")
	}
}

// TestSkeletonBaseChecked: a base another user owns is refused; one others
// may write to is made private.
func TestSkeletonBaseChecked(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the base to another user")
	}
	base := filepath.Join(t.TempDir(), "skel")
	if err := os.Mkdir(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	newHostIn(t, base, 0, 0)
	if fi, err := os.Stat(base); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("base mode %v %v, want 0711", fi.Mode(), err)
	}
	if err := os.Chown(base, Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHost(base, 0, 0); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("NewHost in a base of uid %d: %v", Nobody, err)
	}
}

// TestSkeletonSearchable: a skeleton below a directory the host uid may not
// search is reported.
func TestSkeletonSearchable(t *testing.T) {
	dir := t.TempDir()
	h := newHostIn(t, filepath.Join(dir, "skel"), 0, 0)
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.SearchableBy(Nobody, Nobody); err != nil {
		t.Errorf("with every directory searchable: %v", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := h.SearchableBy(Nobody, Nobody); err == nil || !strings.Contains(err.Error(), dir+" (mode -rwx------") {
		t.Errorf("below a 0700 directory: %v", err)
	}
}

func newHostIn(t *testing.T, base string, uid, gid uint32) *Host {
	t.Helper()
	h, err := NewHost(base, uid, gid)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
