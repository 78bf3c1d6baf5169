package procinit

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWireRoundTrip: what SpecFile writes decodes to the spec it was given,
// up to what the format normalises (duplicate environment entries, the
// default tmpfs size, RLIMIT_NOFILE's floor).
func TestWireRoundTrip(t *testing.T) {
	t.Parallel()
	spec := Spec{
		Path: "/bin/sh", Args: []string{"-c", "echo hi", ""}, Env: []string{"A=1", "B=2", "A=3", "bogus"},
		Dir: "/tmp", Limits: Limits{CPUSeconds: 2, AddressSpace: 1 << 30, FileSize: 4096, OpenFiles: 8, Processes: 9},
		Seccomp: true, DenyUnixSockets: true, PrivateTmp: true, Keep: []string{"/tmp/ws/../ws/run"},
		UID: 70000, GID: 70001, Lifeline: true,
	}
	got := decodeFile(t, spec)
	want := spec
	want.Env = []string{"B=2", "A=3", "bogus"} // os/exec's dedup: the last of each name
	want.Limits.OpenFiles = minOpenFiles
	want.PrivateTmpBytes = defaultTmpBytes
	want.Keep = []string{"/tmp/ws/run"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
	}

	bridged := Spec{Path: "/bin/true", Bridge: &Bridge{Listen: "[::1]:3128", Socket: "/run/egress.sock"}}
	if got := decodeFile(t, bridged); !reflect.DeepEqual(got, bridged) {
		t.Errorf("decoded %+v, want %+v", got, bridged)
	}
	bridged.Bridge.Listen = "127.0.0.1:3128"
	if got := decodeFile(t, bridged); !reflect.DeepEqual(got, bridged) {
		t.Errorf("decoded %+v, want %+v", got, bridged)
	}
}

func decodeFile(t *testing.T, spec Spec) Spec {
	t.Helper()
	f, err := SpecFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	got, err := decodeSpec(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestNULRefused(t *testing.T) {
	t.Parallel()
	for _, spec := range []Spec{
		{Path: "/bin/sh\x00x"}, {Path: "/bin/sh", Args: []string{"a\x00b"}},
		{Path: "/bin/sh", Env: []string{"A=\x00"}}, {Path: "/bin/sh", Dir: "/t\x00mp"},
		{Path: "/bin/sh", Keep: []string{"/tmp/\x00"}},
	} {
		if _, err := SpecFile(spec); err == nil {
			t.Errorf("%+q accepted", []string{spec.Path, spec.Dir, strings.Join(spec.Args, " "), strings.Join(spec.Env, " "), strings.Join(spec.Keep, " ")})
		}
	}
}

// TestEnvDeduplicated: the target sees the last of each variable, as
// os/exec would have given it.
func TestEnvDeduplicated(t *testing.T) {
	t.Parallel()
	r := runInit(t, Spec{Path: "/usr/bin/env", Env: []string{"A=1", "B=2", "A=3"}})
	if r.stdout != "B=2\nA=3\n" {
		t.Errorf("env %q (exit %d, stderr %q)", r.stdout, r.code, r.stderr)
	}
}

// TestMalformedSpecRefused: the init checks every length of the spec it
// reads and runs nothing from a malformed one.
func TestMalformedSpecRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	good := encoded(t, Spec{Path: "/bin/sh", Args: []string{"-c", "touch " + ran}, Env: []string{"A=1"}})
	end := len(good) - 8 // where the end record starts
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	rec := func(tag uint32, p []byte) []byte { return append(append(le32(tag), le32(uint32(len(p)))...), p...) }
	splice := func(b ...[]byte) []byte { return bytes.Join(b, nil) }
	cases := map[string][]byte{
		"empty":               {},
		"magic only":          []byte(wireMagic),
		"bad magic":           splice([]byte("ELSPEC02"), good[8:]),
		"no end":              good[:end],
		"cut in header":       good[:end+3],
		"cut in payload":      good[:20],
		"huge length":         splice(good[:8], le32(wirePath), le32(0xffffffff), good[16:]),
		"after the end":       splice(good, []byte{0}),
		"end not empty":       splice(good[:end], rec(wireEnd, []byte{1})),
		"unknown tag":         splice(good[:end], rec(99, nil), good[end:]),
		"second path":         splice(good[:end], rec(wirePath, []byte("/bin/true")), good[end:]),
		"NUL in arg":          splice(good[:end], rec(wireArg, []byte("a\x00b")), good[end:]),
		"relative dir":        splice(good[:end], rec(wireDir, []byte("tmp")), good[end:]),
		"short rlimit":        splice(good[:end], rec(wireRlimit, make([]byte, 12)), good[end:]),
		"short flags":         splice(good[:end], rec(wireFlags, make([]byte, 2)), good[end:]),
		"odd seccomp":         splice(good[:end], rec(wireFlags, le32(wireFlagSeccomp)), rec(wireSeccomp, make([]byte, 7)), good[end:]),
		"seccomp, no program": splice(good[:end], rec(wireFlags, le32(wireFlagSeccomp)), good[end:]),
		"program, no flag":    splice(good[:end], rec(wireSeccomp, make([]byte, 8)), good[end:]),
		"long seccomp":        splice(good[:end], rec(wireFlags, le32(wireFlagSeccomp)), rec(wireSeccomp, make([]byte, 8*4097)), good[end:]),
		"half a bridge":       splice(good[:end], rec(wireBridgeSocket, []byte("/run/x.sock")), good[end:]),
		"bad family":          splice(good[:end], rec(wireBridgeAddr, append(le32(5), make([]byte, 20)...)), rec(wireBridgeSocket, []byte("/run/x.sock")), good[end:]),
		"long socket":         splice(good[:end], rec(wireBridgeAddr, append(le32(4), make([]byte, 20)...)), rec(wireBridgeSocket, []byte("/"+strings.Repeat("s", 107))), good[end:]),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) { // not parallel: the unaltered spec runs last
			if _, err := decodeSpec(data); err == nil {
				t.Errorf("the Go decoder accepts it")
			}
			r := runWire(t, data)
			if r.code != ExitInitFailed || !strings.HasPrefix(r.stderr, "sandbox init: read spec: ") {
				t.Errorf("exit %d stderr %q, want %d and a spec error", r.code, r.stderr, ExitInitFailed)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("the target ran")
			}
		})
	}
	if r := runWire(t, good); r.code != 0 {
		t.Fatalf("the unaltered spec: exit %d stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the unaltered spec did not run the target: %v", err)
	}
}

func encoded(t *testing.T, spec Spec) []byte {
	t.Helper()
	f, err := SpecFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runWire runs the init with data, whatever it holds, as its spec.
func runWire(t *testing.T, data []byte) result {
	t.Helper()
	fd, err := unix.MemfdCreate("test-spec", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "test-spec")
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	wait, _ := startWith(t, Spec{Path: "/bin/true"}, f)
	return wait()
}
