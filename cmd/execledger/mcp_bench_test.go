package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execledger/execledger/ledger"
)

// BenchmarkMCPEchoOverhead measures the latency of an echo called three
// ways against one executor (serve), alternating call by call so that the
// machine's load falls on all three alike:
//
//   - mcp: tools/call over stdio on an open session (the SDK's client,
//     execledger mcp's real stdio loop over pipes);
//   - client: what submit --wait does once connected, ledger.Client's
//     Submit then Await on an open pool;
//   - cli: the whole `execledger submit --wait` command in process
//     (configuration, pool, listener, then the same calls).
//
// It reports each one's median in ms and the ratios mcp/client and
// mcp/cli (docs/benchmarks.md). Run:
//
//	go test -run '^$' -bench MCPEchoOverhead -benchtime 300x ./cmd/execledger/
func BenchmarkMCPEchoOverhead(b *testing.B) {
	e := newMCPEnv(b, mcpPolicyText)
	cs, _, _ := e.stdioSession(b, e.agent, nil)
	client := ledger.NewClient(e.agent.Pool)
	defer client.Close()
	ctx := context.Background()
	environ := []string{"DATABASE_URL=" + e.agent.URL}

	viaMCP := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "bench"}})
		if err != nil || res.IsError {
			b.Fatalf("mcp echo: %v %+v", err, res)
		}
	}
	viaClient := func() {
		id, err := client.Submit(ctx, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "bench"}, RunID: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if r, err := client.Await(wctx, id); err != nil || r.State != ledger.StateSucceeded {
			b.Fatalf("await: %v %+v", err, r)
		}
	}
	viaCLI := func() {
		if r := execute(b, environ, "", "submit", "echo", `{"text":"bench"}`, "--run", "bench-cli", "--wait"); r.code != exitOK {
			b.Fatalf("submit --wait: %+v", r)
		}
	}
	// Warm up each path (connections, listeners, plans).
	for range 5 {
		viaMCP()
		viaClient()
		viaCLI()
	}
	var tMCP, tClient, tCLI []float64
	timed := func(f func(), into *[]float64) {
		start := time.Now()
		f()
		*into = append(*into, float64(time.Since(start).Microseconds())/1000)
	}
	b.ResetTimer()
	for i := range b.N {
		// Rotate the order so that none always runs first.
		switch i % 3 {
		case 0:
			timed(viaMCP, &tMCP)
			timed(viaClient, &tClient)
			timed(viaCLI, &tCLI)
		case 1:
			timed(viaClient, &tClient)
			timed(viaCLI, &tCLI)
			timed(viaMCP, &tMCP)
		default:
			timed(viaCLI, &tCLI)
			timed(viaMCP, &tMCP)
			timed(viaClient, &tClient)
		}
	}
	b.StopTimer()
	m, c, l := median(tMCP), median(tClient), median(tCLI)
	b.ReportMetric(m, "mcp-p50-ms")
	b.ReportMetric(c, "client-p50-ms")
	b.ReportMetric(l, "cli-p50-ms")
	b.ReportMetric(m/c, "mcp/client")
	b.ReportMetric(m/l, "mcp/cli")
	b.ReportMetric(percentile(tMCP, 0.9), "mcp-p90-ms")
	b.ReportMetric(percentile(tClient, 0.9), "client-p90-ms")
	b.ReportMetric(percentile(tMCP, 0.1), "mcp-p10-ms")
	b.ReportMetric(percentile(tClient, 0.1), "client-p10-ms")
}

func median(xs []float64) float64 { return percentile(xs, 0.5) }

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}
