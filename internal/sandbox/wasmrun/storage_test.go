package wasmrun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/executor"

	"github.com/execledger/execledger/ledger"
)

// storageHost registers caps_storage's entrypoints, granted prefix
// "acme/", each with fuel and timeout as given (0: the defaults).
func storageHost(t *testing.T, fuel int64, timeout time.Duration, entrypoints ...string) *Host {
	t.Helper()
	c := Capabilities{StoragePrefixes: []string{"acme/"}}
	wasm := wat(t, "caps_storage")
	cfg := Config{Policy: c, Storage: &MemoryStorage{}}
	for _, e := range entrypoints {
		m := module(t, tool(e), wasm)
		m.Entrypoint, m.Capabilities, m.FuelLimit, m.Timeout = e, c, fuel, timeout
		cfg.Modules = append(cfg.Modules, m)
	}
	return host(t, cfg)
}

// TestStorageWritesLastWins: a key put twice in a call is one write, of
// the last value.
func TestStorageWritesLastWins(t *testing.T) {
	t.Parallel()
	res := run(t, storageHost(t, 0, 0, "put_twice"), tool("put_twice"), `{}`)
	wantOutput(t, res, `{"result": 0}`)
	if w := res.StorageWrites; len(w) != 1 || w[0].Key != "acme/k" || string(w[0].Value) != "v" {
		t.Errorf("StorageWrites %q, want acme/k = v", w)
	}
}

// TestStorageWritesBounded: a call's pending values are bounded by
// MaxStorageWriteBytes, a rewritten key counting once, at its latest
// value; the put beyond is refused with -4 and recorded as too_large.
func TestStorageWritesBounded(t *testing.T) {
	t.Parallel()
	res := run(t, storageHost(t, 0, 0, "put_bytes"), tool("put_bytes"), `{}`)
	wantOutput(t, res, `{"result": -4}`)
	total := 0
	for _, w := range res.StorageWrites {
		total += len(w.Value)
	}
	if len(res.StorageWrites) != 16 || total != MaxStorageWriteBytes {
		t.Errorf("%d writes of %d bytes, want 16 of %d", len(res.StorageWrites), total, MaxStorageWriteBytes)
	}
	if !slices.IsSortedFunc(res.StorageWrites, func(a, b executor.StorageWrite) int { return strings.Compare(a.Key, b.Key) }) {
		t.Error("StorageWrites are not in key order")
	}
	if len(res.Events) != 18 {
		t.Fatalf("%d events, want 18", len(res.Events))
	}
	for i, want := range map[int]string{15: "acme/bA ok", 16: "acme/bP ok", 17: "acme/bQ too_large"} {
		if p := res.Events[i].Payload.(map[string]any); fmt.Sprint(p["key"], " ", p["outcome"]) != want {
			t.Errorf("event %d %v, want %s", i, p, want)
		}
	}
}

// TestStorageWritesKeyBound: at most MaxStorageWrites keys are pending;
// one already pending may still be written.
func TestStorageWritesKeyBound(t *testing.T) {
	t.Parallel()
	var cc callCaps
	for i := range MaxStorageWrites {
		if r := cc.put(fmt.Sprintf("acme/%03d", i), []byte("v")); r != 0 {
			t.Fatalf("put %d: %d", i, r)
		}
	}
	if r := cc.put("acme/new", nil); r != capTooLarge {
		t.Errorf("a key beyond the bound: %d, want %d", r, capTooLarge)
	}
	if r := cc.put("acme/000", []byte("w")); r != 0 {
		t.Errorf("a pending key written again: %d", r)
	}
	w := cc.storageWrites()
	if len(w) != MaxStorageWrites || w[0].Key != "acme/000" || string(w[0].Value) != "w" {
		t.Errorf("%d writes, first %+v", len(w), w[0])
	}
}

// TestStorageWritesOfAnInterruptedCall: a call that puts and then runs out
// of time, or is cancelled, leaves no writes.
func TestStorageWritesOfAnInterruptedCall(t *testing.T) {
	t.Parallel()
	h := storageHost(t, 1<<60, 200*time.Millisecond, "put_loop")
	res := run(t, h, tool("put_loop"), `{}`)
	wantKind(t, res, ledger.KindTimedOut)
	if len(res.StorageWrites) != 0 {
		t.Errorf("a timed-out call's writes %+v", res.StorageWrites)
	}
	// A timeout the cancellation surely comes before, however loaded the
	// machine: only the cancellation can end this call.
	h = storageHost(t, 1<<60, time.Minute, "put_loop")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res = runCtx(t, ctx, h, tool("put_loop"), `{}`)
	wantKind(t, res, ledger.KindCancelled)
	if len(res.StorageWrites) != 0 {
		t.Errorf("a cancelled call's writes %+v", res.StorageWrites)
	}
}
