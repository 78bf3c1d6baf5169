package policy

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log sink safe to read while the watcher writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitUntil polls cond until it holds, failing t after a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatcherReloadsEditsAndRefusesBadOnes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "p.cedar")
	first := `@id("a") permit (principal == Principal::"a", action == Action::"tool.execute", resource);`
	if err := os.WriteFile(file, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	initial, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	inForce := initial
	load := func() *Engine { mu.Lock(); defer mu.Unlock(); return inForce }
	var logs lockedBuffer
	w := Watcher{Paths: []string{file}, Interval: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Apply: func(_ context.Context, e *Engine) error { mu.Lock(); defer mu.Unlock(); inForce = e; return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, initial) }()
	defer func() { cancel(); <-done }()

	allowed := func(p string) bool { return load().Authorize(Request{Principal: p, Tool: "echo"}).Allowed }
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A good edit is put in force.
	write(first + "\n" + `@id("b") permit (principal == Principal::"b", action == Action::"tool.execute", resource);`)
	waitUntil(t, "the edit permitting b", func() bool { return allowed("b") })
	good := load().Digest()
	// A bad one is refused with its line, and the previous policy stays.
	write(first + "\n\n" + `@id("c") permit (principal == Principal::"c" action, resource);`)
	waitUntil(t, "the refusal", func() bool { return strings.Contains(logs.String(), "refused the edit") })
	if l := logs.String(); !strings.Contains(l, "p.cedar:3:") || !strings.Contains(l, good) {
		t.Errorf("the refusal names neither the line nor the policy in force:\n%s", l)
	}
	if load().Digest() != good || !allowed("b") || allowed("c") {
		t.Fatalf("after a bad edit the policy in force is %s, want %s", load().Digest(), good)
	}
	if n := strings.Count(logs.String(), "refused the edit"); n != 1 {
		time.Sleep(50 * time.Millisecond) // ten more reads of the same text: still one line
		if n = strings.Count(logs.String(), "refused the edit"); n != 1 {
			t.Errorf("the same bad text was reported %d times", n)
		}
	}
	// Fixing it puts the fix in force.
	write(first + "\n" + `@id("c") permit (principal == Principal::"c", action == Action::"tool.execute", resource);`)
	waitUntil(t, "the fixed edit", func() bool { return allowed("c") })
	if allowed("b") {
		t.Error("b's permit was removed, yet b is allowed")
	}
}

func TestWatcherKeepsThePolicyWhenApplyFails(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "p.cedar")
	if err := os.WriteFile(file, []byte(`permit (principal, action == Action::"tool.execute", resource);`), 0o644); err != nil {
		t.Fatal(err)
	}
	initial, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	calls := make(chan string, 100)
	w := Watcher{Paths: []string{file}, Interval: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Apply: func(_ context.Context, e *Engine) error {
			calls <- e.Digest()
			return context.DeadlineExceeded
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, initial) }()
	defer func() { cancel(); <-done }()
	if err := os.WriteFile(file, []byte(`forbid (principal, action == Action::"tool.execute", resource);`), 0o644); err != nil {
		t.Fatal(err)
	}
	<-calls
	<-calls // tried again at the next read
	waitUntil(t, "the log line", func() bool { return strings.Contains(logs.String(), "could not put the edit in force") })
}
