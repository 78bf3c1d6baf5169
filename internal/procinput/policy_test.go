package procinput

import (
	"slices"
	"testing"

	"github.com/execledger/execledger/internal/egress"
)

// TestEgressAllowlistIsTheProxys: the policy's allowlist is the proxy's
// allowlist of ruleProxyEntries, which TestPreflightAndProxyAgree gives
// the proxy.
func TestEgressAllowlistIsTheProxys(t *testing.T) {
	got, err := Policy{EgressAllowlist: rulePolicy}.egressAllowlist()
	must(t, err)
	want, err := egress.ParseAllowlist(ruleProxyEntries)
	must(t, err)
	if !slices.Equal(got.Entries(), want.Entries()) {
		t.Fatalf("policy allowlist %q is %q, want %q", rulePolicy, got.Entries(), want.Entries())
	}
}
