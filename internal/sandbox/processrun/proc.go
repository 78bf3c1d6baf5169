//go:build linux

package processrun

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// descendants returns every process below root, from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/<pid>/stat.
func parentOf(pid int) (int, bool) {
	f, err := statFields(pid)
	if err != nil {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}

// statFields returns the fields of /proc/<pid>/stat from field 3 (state)
// on, at least 20 of them (up to starttime, field 22). The command name
// (field 2) is in parentheses and may hold spaces or parentheses itself:
// fields are counted after the last ')'.
func statFields(pid int) ([][]byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return f, nil
}
