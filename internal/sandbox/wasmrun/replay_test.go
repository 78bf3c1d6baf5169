package wasmrun

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/execledger/execledger/executor"
)

// TestReplayRepeatsACall checks that Replay gives a call's output and
// fuel again, clock and random source included (the echo skill shows
// both).
func TestReplayRepeatsACall(t *testing.T) {
	t.Parallel()
	cfg := Config{Modules: []Module{module(t, "acme.echo", echoWasm(t))}, CacheDir: cacheDir()}
	in := `{"a": "b"}`
	res := run(t, host(t, cfg), "acme.echo", in)
	if res.ErrorKind != "" {
		t.Fatalf("%s: %s", res.ErrorKind, res.Error)
	}
	cfg.Engine = EngineInterpreter // the engine does not matter
	r, err := Replay(context.Background(), cfg, "acme.echo", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := executor.StoredOutput(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Output, stored) || !r.Metered || r.FuelUsed != res.Resources["fuel_used"] || r.ErrorKind != "" ||
		r.ModuleDigest != res.Enforcement["module_digest"] {
		t.Fatalf("replay %+v\nof %s fuel %d digest %v", r, res.Output, res.Resources["fuel_used"], res.Enforcement["module_digest"])
	}
}

// TestReplayRefusals checks that Replay refuses an unknown tool and a
// module granted a capability.
func TestReplayRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := module(t, "acme.answer", wat(t, "answer"))
	if _, err := Replay(ctx, Config{Modules: []Module{m}}, "acme.other", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), `no module is registered as "acme.other"`) {
		t.Fatalf("unknown tool: %v", err)
	}
	m.Capabilities = Capabilities{Channels: []string{"news"}, Secrets: []string{"token"}}
	cfg := Config{Modules: []Module{m}, Policy: Capabilities{Channels: []string{"news"}, Secrets: []string{"token"}}}
	_, err := Replay(ctx, cfg, "acme.answer", []byte(`{}`))
	if !errors.Is(err, ErrNotReplayable) || !strings.Contains(err.Error(), "secret token, channel news") {
		t.Fatalf("granted capabilities: %v", err)
	}
	// Asked for but not granted by the policy: nothing is granted.
	cfg.Policy = Capabilities{}
	r, err := Replay(ctx, cfg, "acme.answer", []byte(`{}`))
	if err != nil || string(r.Output) != `{"result":42}` {
		t.Fatalf("ungranted capabilities: %+v %v", r, err)
	}
}
