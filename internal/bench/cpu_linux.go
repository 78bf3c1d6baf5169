package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// statTimes reads utime, stime, cutime and cstime (fields 14 to 17) and
// the parent pid (field 4) of /proc/<pid>/stat.
func statTimes(pid string) (ppid int, self, children time.Duration, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, 0, 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 15 {
		return 0, 0, 0, false
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	ppid = int(n(4))
	self = time.Duration(n(14)+n(15)) * clockTick
	children = time.Duration(n(16)+n(17)) * clockTick
	return ppid, self, children, true
}

func processCPU() (time.Duration, bool) {
	_, self, _, ok := statTimes("self")
	return self, ok
}

// clusterCPU is the postmaster's CPU, its reaped children's, and its live
// children's.
func clusterCPU(postmaster int) (time.Duration, bool) {
	pm := strconv.Itoa(postmaster)
	_, self, children, ok := statTimes(pm)
	if !ok {
		return 0, false
	}
	total := self + children
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if ppid, t, _, ok := statTimes(e.Name()); ok && ppid == postmaster {
			total += t
		}
	}
	return total, true
}
