package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/config"
)

// TestResolveTier: tier auto is C where bubblewrap makes a sandbox; with
// no bubblewrap it is B for a root daemon, with a warning that says what
// tier B lacks, and an error naming both ways out otherwise. Not
// parallel: it empties PATH.
func TestResolveTier(t *testing.T) {
	p := config.Process{Tier: "auto"}
	if warn, err := resolveTier(context.Background(), &p); err != nil || warn != "" || p.Tier != "C" {
		t.Fatalf("with bubblewrap: tier %s, warning %q, %v", p.Tier, warn, err)
	}
	p = config.Process{Tier: "B"}
	if _, err := resolveTier(context.Background(), &p); err != nil || p.Tier != "B" {
		t.Fatalf("an explicit tier changed: %s %v", p.Tier, err)
	}
	t.Setenv("PATH", t.TempDir())
	p = config.Process{Tier: "auto"}
	warn, err := resolveTier(context.Background(), &p)
	if os.Geteuid() == 0 {
		if err != nil || p.Tier != "B" || !strings.Contains(warn, "tier B") || !strings.Contains(warn, "bubblewrap") {
			t.Fatalf("root without bubblewrap: tier %s, warning %q, %v", p.Tier, warn, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "install bubblewrap") || !strings.Contains(err.Error(), "process_run.enabled = false") {
		t.Fatalf("non-root without bubblewrap: %v", err)
	}
}
