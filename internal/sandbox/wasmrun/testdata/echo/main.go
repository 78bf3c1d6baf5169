// Command echo is a tier A test skill, built with GOOS=wasip1
// GOARCH=wasm: it returns its input with what it saw of its sandbox, and
// on request fails, allocates, sleeps or writes raw output.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"
)

type request struct {
	Exit    int    `json:"exit"`
	Stderr  string `json:"stderr"`
	AllocMB int    `json:"alloc_mb"`
	SleepMS int    `json:"sleep_ms"`
	Raw     string `json:"raw"`
	Panic   string `json:"panic"`
}

var hold [][]byte

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading stdin:", err)
		os.Exit(1)
	}
	var v map[string]any
	var req request
	if err := json.Unmarshal(in, &v); err != nil {
		fmt.Fprintln(os.Stderr, "bad input:", err)
		os.Exit(2)
	}
	_ = json.Unmarshal(in, &req)
	if req.Stderr != "" {
		fmt.Fprintln(os.Stderr, req.Stderr)
	}
	if req.Panic != "" {
		panic(req.Panic)
	}
	if req.Exit != 0 {
		os.Exit(req.Exit)
	}
	for i := 0; i < req.AllocMB; i++ {
		b := make([]byte, 1<<20)
		b[len(b)-1] = 1
		hold = append(hold, b)
	}
	slept := time.Duration(0)
	if req.SleepMS > 0 {
		start := time.Now()
		time.Sleep(time.Duration(req.SleepMS) * time.Millisecond)
		slept = time.Since(start)
	}
	if req.Raw != "" {
		os.Stdout.WriteString(req.Raw)
		return
	}
	fsErr := ""
	if _, err := os.ReadFile("/etc/passwd"); err != nil {
		fsErr = err.Error()
	}
	out := map[string]any{
		"input":    v,
		"args":     os.Args,
		"environ":  os.Environ(),
		"now":      time.Now().UTC().Format(time.RFC3339Nano),
		"random":   rand.Uint64(),
		"fs_error": fsErr,
		"slept_ms": slept.Milliseconds(),
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "writing stdout:", err)
		os.Exit(1)
	}
}
