package seccomp

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSyscallTablesMatchXSys checks both hand-written tables against the
// generated syscall numbers of golang.org/x/sys/unix for each architecture,
// whatever the host: every entry must match, and every policy syscall x/sys
// knows for the architecture must be in the table.
func TestSyscallTablesMatchXSys(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("locate golang.org/x/sys: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("golang.org/x/sys is not in the module cache (go mod download golang.org/x/sys)")
	}
	names := append(deniedSyscalls(), "clone", "clone3", "unshare", "ioctl", "personality", "socket", "socketpair")
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			xsys := readXSysNumbers(t, filepath.Join(dir, "unix", "zsysnum_linux_"+goarch+".go"))
			tbl, err := lookupArch(goarch)
			if err != nil {
				t.Fatal(err)
			}
			for name, nr := range tbl.syscalls {
				if want, ok := xsys[name]; !ok || want != nr {
					t.Errorf("%s = %d in the table, %d (present %t) in x/sys", name, nr, want, ok)
				}
			}
			for name, nr := range allowedSamples[goarch] {
				if xsys[name] != nr {
					t.Errorf("test sample %s = %d, x/sys has %d", name, nr, xsys[name])
				}
			}
			for _, name := range names {
				_, inTable := tbl.syscalls[name]
				if _, inXSys := xsys[name]; inXSys != inTable {
					t.Errorf("%s: in x/sys %t, in the table %t", name, inXSys, inTable)
				}
			}
		})
	}
}

// readXSysNumbers parses the SYS_* constants of a zsysnum file.
func readXSysNumbers(t *testing.T, path string) map[string]uint32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`^\s*SYS_(\w+)\s*=\s*(\d+)`)
	nums := make(map[string]uint32)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, err := strconv.ParseUint(m[2], 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		nums[strings.ToLower(m[1])] = uint32(n)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(nums) < 250 {
		t.Fatalf("%s: only %d syscall numbers parsed", path, len(nums))
	}
	return nums
}
