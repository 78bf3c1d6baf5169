//go:build linux

package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const hybridMountInfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
`

func TestParseMountInfo(t *testing.T) {
	got := parseMountInfo([]byte(hybridMountInfo +
		`50 31 0:39 /sub /mnt/cg\040two ro,relatime - cgroup2 cgroup2 rw
51 31 0:40 / /x rw - tmpfs cgroup2 rw
`))
	want := []mount{
		{dir: "/sys/fs/cgroup/unified", root: "/"},
		{dir: "/mnt/cg two", root: "/sub", readOnly: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mounts %+v, want %+v", got, want)
	}
}

func TestParseProcCgroup(t *testing.T) {
	for in, want := range map[string]string{
		"4:memory:/a\n0::/\n":             "/",
		"0::/system.slice/x.service\n":    "/system.slice/x.service",
		"1:name=systemd:/\n0::relative\n": "",
		"4:memory:/a\n":                   "",
	} {
		got, ok := parseProcCgroup([]byte(in))
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestWithin(t *testing.T) {
	cases := []struct {
		p, root, rel string
		ok           bool
	}{
		{"/a/b", "/", "/a/b", true},
		{"/a/b", "/a", "/b", true},
		{"/a", "/a", "/", true},
		{"/ab", "/a", "", false},
		{"/b", "/a", "", false},
	}
	for _, c := range cases {
		rel, ok := within(c.p, c.root)
		if rel != c.rel || ok != c.ok {
			t.Errorf("within(%q, %q) = %q %v", c.p, c.root, rel, ok)
		}
	}
}

func TestParseOwner(t *testing.T) {
	if o, ok := parseOwner("x-12-3456"); !ok || o != (owner{12, 3456}) || o.dirName() != "x-12-3456" {
		t.Errorf("x-12-3456: %+v %v", o, ok)
	}
	for _, bad := range []string{"x-12", "x--1-2", "x-0-1", "x-01-2", "x-1-02", "y-1-2", "x-1-2-3", "x-a-1"} {
		if _, ok := parseOwner(bad); ok {
			t.Errorf("parseOwner accepted %q", bad)
		}
	}
}

func TestNames(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "a.b", "cgroup.procs", "a b", strings.Repeat("a", maxName+1), "a\x00"} {
		if err := validName(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("validName(%q) = %v", bad, err)
		}
	}
	for _, good := range []string{"a", "x-1-2", "run_7-B", strings.Repeat("a", maxName)} {
		if err := validName(good); err != nil {
			t.Errorf("validName(%q) = %v", good, err)
		}
	}
	for _, p := range []string{"relative", "/", "/a/../b", "/a/", "/a//b"} {
		if _, err := Open(Options{Path: p}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Open with path %q: %v", p, err)
		}
	}
	if _, err := Open(Options{Name: "../x"}); !errors.Is(err, ErrInvalidName) {
		t.Errorf("Open with name ../x: %v", err)
	}
}

// TestOpenUnavailable: without a writable cgroup2 file system Open fails
// with ErrUnavailable, and says why.
func TestOpenUnavailable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v2Self := write("cgroup-v2", "0::/\n")
	fakeRoot := filepath.Join(dir, "fake-cgroup2")
	if err := os.Mkdir(fakeRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, mountInfo, procCgroup, why string
	}{
		{"v1 only", write("mi-v1", "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"), v2Self, "no cgroup2 file system"},
		{"not cgroup2", write("mi-fake", "41 31 0:38 / "+fakeRoot+" rw - cgroup2 cgroup2 rw\n"), v2Self, "not a cgroup2 file system"},
		{"read-only", write("mi-ro", "41 31 0:38 / /sys/fs/cgroup/unified ro - cgroup2 cgroup2 rw\n"), v2Self, "read-only"},
		{"no v2 entry", write("mi-ok", hybridMountInfo), write("cgroup-v1", "4:memory:/a\n"), "no cgroup v2"},
		{"other subtree", write("mi-sub", "41 31 0:38 /elsewhere /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"), v2Self, "does not hold our cgroup"},
		{"missing file", filepath.Join(dir, "none"), v2Self, "no such file"},
	}
	for _, c := range cases {
		_, err := Open(Options{Name: "exltest-unavailable", MountInfo: c.mountInfo, ProcCgroup: c.procCgroup})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want ErrUnavailable saying %q", c.name, err, c.why)
		}
	}
	if entries, _ := os.ReadDir(fakeRoot); len(entries) != 0 {
		t.Errorf("Open wrote into a file system that is not cgroup2: %v", entries)
	}
}

func TestCheckKernel(t *testing.T) {
	for release, ok := range map[string]bool{"6.18.44-fc-v595": true, "5.7.0": true, "5.10": true, "5.6.19-arch1": false,
		"4.19.0-26-amd64": false, "5.15rc1": true, "garbage": false} {
		err := checkKernel(release)
		if (err == nil) != ok || err != nil && !errors.Is(err, ErrUnavailable) {
			t.Errorf("checkKernel(%q) = %v", release, err)
		}
	}
}

func FuzzParseMountInfo(f *testing.F) {
	f.Add([]byte(hybridMountInfo))
	f.Add([]byte(`1 2 3:4 /a\0 /b\134 rw - cgroup2 x rw`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range parseMountInfo(data) {
			if m.dir == "" && m.root == "" {
				t.Errorf("empty mount from %q", data)
			}
		}
	})
}
