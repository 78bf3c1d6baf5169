package policy

import (
	"fmt"
	"strings"
	"testing"
)

// benchPolicies returns n policies: a mix of tool permits, group forbids and
// skill permits, the last of which allows the benchmark request.
func benchPolicies(n int) string {
	var b strings.Builder
	for i := range n - 1 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "permit(principal == Principal::\"user%d\", action == Action::\"tool.execute\", resource == Tool::\"tool%d\") when { context.channel == \"cli\" };\n", i, i)
		case 1:
			fmt.Fprintf(&b, "forbid(principal, action == Action::\"tool.execute\", resource in ToolGroup::\"grp%d\") when { context.capabilities.contains(\"network\") };\n", i)
		default:
			fmt.Fprintf(&b, "permit(principal, action == Action::\"skill.execute\", resource == Skill::\"skill%d\") unless { context.is_sensitive_action };\n", i)
		}
	}
	b.WriteString(`permit(principal == Principal::"alice", action in [Action::"tool.execute", Action::"skill.execute"], resource) when { context.channel == "cli" };` + "\n")
	return b.String()
}

func BenchmarkAuthorize(b *testing.B) {
	tool := Request{Principal: "alice", Tool: "process.run", Channel: "cli", Device: "laptop-1", ChannelBound: true, DeviceBound: true, Session: "s1", RunID: "r1", Capabilities: []string{"process_exec", "filesystem_read"}}
	skill := tool
	skill.Tool, skill.Skill = "acme.hello", "acme"
	for _, n := range []int{10, 100} {
		e := mustSources(b, "bench.cedar", benchPolicies(n))
		if got := len(e.PolicyIDs()); got != n {
			b.Fatalf("loaded %d policies, want %d", got, n)
		}
		for _, c := range []struct {
			name string
			req  Request
		}{{"tool", tool}, {"skill", skill}} {
			b.Run(fmt.Sprintf("policies=%d/%s", n, c.name), func(b *testing.B) {
				if d := e.Authorize(c.req); !d.Allowed {
					b.Fatalf("benchmark request denied: %+v", d)
				}
				b.ReportAllocs()
				for b.Loop() {
					e.Authorize(c.req)
				}
			})
		}
	}
}
