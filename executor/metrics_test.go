package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/execledger/execledger/ledger"
)

// TestKillReason: every reason execledger_sandbox_kills_total has, told
// from results as the tiers build them, and the results that are no kill.
func TestKillReason(t *testing.T) {
	t.Parallel()
	limit := func(l string) Result {
		return Result{ErrorKind: "quota_exceeded", Output: json.RawMessage(`{"exit_code":137,"limit_exceeded":"` + l + `","tier":"C"}`)}
	}
	wasm := func(r map[string]int64) Result {
		return Result{ErrorKind: "quota_exceeded", Resources: r, Enforcement: map[string]any{"output_limit_bytes": 1024, "fuel_limit": int64(100)}}
	}
	for _, c := range []struct {
		name, tier string
		res        Result
		want       string
	}{
		{"success", "C", Result{Output: json.RawMessage(`{}`)}, ""},
		{"the program's own failure", "C", Result{ErrorKind: "runtime_failure", Output: json.RawMessage(`{"exit_code":1}`)}, ""},
		{"timed out", "B", Result{ErrorKind: "timed_out", TimedOut: true}, killTimeout},
		{"timed out, flag only", "A", Result{ErrorKind: "runtime_failure", TimedOut: true}, killTimeout},
		{"timed out before the process started", "C", Result{ErrorKind: "timed_out"}, killTimeout},
		{"cancelled", "builtin", Result{ErrorKind: "cancelled"}, killCancelled},
		{"output limit, tier C", "C", limit("output_limit_bytes"), killOutputLimit},
		{"cpu", "B", limit("rlimit_cpu_seconds"), killCPU},
		{"file size", "B", limit("rlimit_file_size"), killFileSize},
		{"cgroup memory", "C", limit("cgroup memory.max"), killMemory},
		{"cgroup pids", "C", limit("cgroup pids.max"), killProcesses},
		{"a limit this version does not know", "C", limit("cgroup io.max"), killOther},
		{"background process limit: a refusal", "C", Result{ErrorKind: "quota_exceeded", Error: "run r already has 4 running background processes (limit 4)"}, ""},
		{"tier A refused before running", "A", Result{ErrorKind: "quota_exceeded", Resources: map[string]int64{"wall_ms": 1}}, ""},
		{"tier A output", "A", wasm(map[string]int64{"memory_pages_peak": 1, "output_bytes": 2048, "fuel_limit": 100, "fuel_used": 10}), killOutputLimit},
		{"tier A fuel", "A", wasm(map[string]int64{"memory_pages_peak": 1, "output_bytes": 0, "fuel_limit": 100, "fuel_used": 100}), killFuel},
		{"tier A memory", "A", wasm(map[string]int64{"memory_pages_peak": 16, "output_bytes": 0, "fuel_limit": 100, "fuel_used": 50}), killMemory},
		{"tier A memory, unmetered", "A", wasm(map[string]int64{"memory_pages_peak": 16}), killMemory},
	} {
		if got := killReason(c.tier, c.res); got != c.want {
			t.Errorf("%s: killReason = %q, want %q", c.name, got, c.want)
		}
	}
}

// scripted is a tool of a given tier whose results the test sets.
type scripted struct {
	name, tier string
	res        Result
}

func (s scripted) Name() string                             { return s.name }
func (s scripted) Executor() string                         { return "sandbox_tier_" + s.tier }
func (s scripted) Tier() string                             { return s.tier }
func (scripted) SafeToRepeat() bool                         { return true }
func (scripted) Prepare(context.Context, Call) (any, error) { return nil, nil }
func (s scripted) Run(context.Context, Call) Result         { return s.res }

// TestRunMetrics runs calls through a real executor and reads what they
// recorded: tier latency by outcome, kills by reason (one told by the
// executor's own timeout), fuel, and egress allowed and refused.
func TestRunMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	pids := scripted{"scripted.c", "C", Result{ErrorKind: "quota_exceeded", Error: "pids",
		Output:    json.RawMessage(`{"exit_code":1,"limit_exceeded":"cgroup pids.max"}`),
		Resources: map[string]int64{"egress_connections": 3, "egress_refused": 1}}}
	fuel := scripted{"scripted.a", "A", Result{Output: json.RawMessage(`{"result":42}`),
		Resources: map[string]int64{"memory_pages_peak": 1, "fuel_limit": 1_000_000, "fuel_used": 5000}}}
	e := setup(t, func(c *Config) {
		c.Metrics = NewMetrics(reg)
		c.ToolTimeout = 300 * time.Millisecond // the sleep below outlasts it
	}, pids, fuel)
	for _, p := range []ledger.SubmitParams{
		{Tool: "scripted.c", Input: map[string]any{}},
		{Tool: "scripted.a", Input: map[string]any{}},
		{Tool: "echo", Input: map[string]any{"text": "hi"}},
		{Tool: "sleep", Input: map[string]any{"ms": 5000}},
	} {
		await(t, e.alice, submit(t, e.alice, p))
	}
	got := gathered(t, reg)
	for series, want := range map[string]float64{
		`execledger_sandbox_kills_total{reason="processes",tier="C"}`:                                     1,
		`execledger_sandbox_kills_total{reason="timeout",tier="builtin"}`:                                 1,
		`execledger_egress_connections_total{allowed="true",tier="C"}`:                                    2,
		`execledger_egress_connections_total{allowed="false",tier="C"}`:                                   1,
		`execledger_wasm_fuel_used_count{tool="scripted.a"}`:                                              1,
		`execledger_wasm_fuel_used_sum{tool="scripted.a"}`:                                                5000,
		`execledger_tier_run_duration_seconds_count{outcome="succeeded",tier="builtin",tool="echo"}`:      1,
		`execledger_tier_run_duration_seconds_count{outcome="timed_out",tier="builtin",tool="sleep"}`:     1,
		`execledger_tier_run_duration_seconds_count{outcome="quota_exceeded",tier="C",tool="scripted.c"}`: 1,
		`execledger_tier_run_duration_seconds_count{outcome="succeeded",tier="A",tool="scripted.a"}`:      1,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	kills := 0.0
	for series, v := range got {
		if strings.HasPrefix(series, "execledger_sandbox_kills_total{") {
			kills += v
		}
	}
	if kills != 2 {
		t.Errorf("%v kills in all, want 2 (the successes and the echo are none): %v", kills, got)
	}
	if d := got[`execledger_tier_run_duration_seconds_sum{outcome="timed_out",tier="builtin",tool="sleep"}`]; d < 0.3 || d > 5 {
		t.Errorf("the sleep cut by the 300ms timeout ran %vs", d)
	}
}

// gathered flattens reg's counters, gauges and histograms (as _count and
// _sum) into series names with their labels, sorted as Prometheus writes
// them.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					labels += ","
				}
				labels += l.GetName() + `="` + l.GetValue() + `"`
			}
			name := func(suffix string) string { return mf.GetName() + suffix + "{" + labels + "}" }
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[name("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name("")] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name("_count")] = float64(m.GetHistogram().GetSampleCount())
				out[name("_sum")] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}
