package bench

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/execledger/execledger/internal/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun checks the harness, not the speed: a small run of each mode and
// system must account for every request, see all of them succeed, and
// report ordered latency percentiles and the ratios. Without the river
// build tag it runs Execledger alone; make test runs it with the tag too.
func TestRun(t *testing.T) {
	t.Parallel()
	system, want := SystemAll, []string{SystemRiver, SystemRiverAudited, SystemExecledger}
	if !RiverLinked {
		system, want = SystemExecledger, []string{SystemExecledger}
	}
	for _, mode := range []string{ModeBurndown, ModeContinuous} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var progress strings.Builder
			// The bounds catch a hang; a busy machine only makes the
			// run slower (the window waits for a first completion).
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			r, err := Run(ctx, Config{AdminURL: testdb.AdminURL(), Mode: mode, System: system, N: 300,
				Duration: 2 * time.Second, Submitters: 4, Workers: 16, Interval: 500 * time.Millisecond,
				Stall: 2 * time.Minute, Progress: &progress})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, progress.String())
			}
			if err := r.Check(); err != nil {
				t.Fatal(err)
			}
			if len(r.Runs) != len(want) {
				t.Fatalf("runs: %+v, want %v", r.Runs, want)
			}
			for i, s := range r.Runs {
				if s.System != want[i] {
					t.Fatalf("runs: %+v, want %v", r.Runs, want)
				}
				checkSummary(t, mode, s)
			}
			if !strings.Contains(progress.String(), "requests/s") {
				t.Errorf("no progress lines:\n%s", progress.String())
			}
			if !RiverLinked {
				return
			}
			if r.Ratio <= 0 || r.RatioAudited <= 0 || r.RatioAuditedRiver <= 0 {
				t.Errorf("ratios %v, %v, %v, want > 0", r.Ratio, r.RatioAudited, r.RatioAuditedRiver)
			}
			var out strings.Builder
			r.Print(&out)
			for _, ratio := range []string{"execledger/river", "execledger/river-audited", "river-audited/river"} {
				if !strings.Contains(out.String(), "ratio "+ratio+" ("+mode+" requests/s)") {
					t.Errorf("report without the ratio %s:\n%s", ratio, out.String())
				}
			}
			if !strings.Contains(out.String(), "signatures: verified\n") {
				t.Errorf("report without river-audited's verified audit log:\n%s", out.String())
			}
		})
	}
}

func checkSummary(t *testing.T, mode string, s *Summary) {
	t.Helper()
	if mode == ModeBurndown && (s.Requests != 300 || s.Completed != 300) {
		t.Errorf("%s: requests %d, completed %d, want 300", s.System, s.Requests, s.Completed)
	}
	// How much a window of 2 s holds depends on the machine; that the
	// figures agree with each other does not.
	if mode == ModeContinuous && (s.Requests == 0 || s.Completed == 0 || s.Completed > s.Requests || s.Seconds < 2 ||
		math.Abs(s.PerSecond-float64(s.Completed)/s.Seconds) > 1e-6*s.PerSecond) {
		t.Errorf("%s: requests %d, completed %d in the window of %vs, %v/s", s.System, s.Requests, s.Completed, s.Seconds, s.PerSecond)
	}
	if s.States[s.SuccessState] != s.Requests || s.Latency.Count != s.Requests {
		t.Errorf("%s: %d requests, states %v, latency over %d", s.System, s.Requests, s.States, s.Latency.Count)
	}
	l := s.Latency
	if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("%s: latency percentiles out of order: %+v", s.System, l)
	}
	if s.PerSecond <= 0 || s.Seconds <= 0 {
		t.Errorf("%s: %v requests/s over %vs", s.System, s.PerSecond, s.Seconds)
	}
	wantEvents := s.System == SystemExecledger
	// river-audited's audit log is verified after every run: three rows
	// per job (a started row more for each attempt River retried), one
	// good signature per job.
	if a := s.Audit; (a != nil) != (s.System == SystemRiverAudited) {
		t.Errorf("%s: audit check %+v", s.System, a)
	} else if a != nil && (a.Err() != nil || a.Rows < 3*s.Requests || a.Jobs != s.Requests || a.Signatures != s.Requests ||
		s.AuditRowsPerRequest != float64(a.Rows)/float64(s.Requests)) {
		t.Errorf("%s: audit check %+v, %v rows per request, err %v", s.System, a, s.AuditRowsPerRequest, a.Err())
	}
	if (s.EventsPerRequest >= 3) != wantEvents { // tool.requested, request.decided, execution.completed
		t.Errorf("%s: %.2f events per request", s.System, s.EventsPerRequest)
	}
	// Execledger's asynchronous read models are followed and their lag
	// sampled; River has none.
	if (s.ProjectionLag != nil && s.ProjectionLag.Count > 0) != wantEvents {
		t.Errorf("%s: read model lag %+v", s.System, s.ProjectionLag)
	}
	if (s.SealerLag != nil && s.SealerLag.Count > 0) != wantEvents {
		t.Errorf("%s: sealer lag %+v", s.System, s.SealerLag)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	good := Config{AdminURL: "postgres://x", System: SystemExecledger}.WithDefaults()
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, sys := range []string{SystemRiver, SystemRiverAudited, SystemBoth, SystemAll, "execledger,river-audited"} {
		c := good
		c.System = sys
		if err := c.Validate(); (err == nil) != RiverLinked {
			t.Errorf("system %s with RiverLinked %v: %v", sys, RiverLinked, err)
		} else if err != nil && !strings.Contains(err.Error(), "-tags river") {
			t.Errorf("system %s without River: %v, want a hint at -tags river", sys, err)
		}
	}
	for name, mutate := range map[string]func(*Config){
		"no server":   func(c *Config) { c.AdminURL = "" },
		"bad mode":    func(c *Config) { c.Mode = "sprint" },
		"bad system":  func(c *Config) { c.System = "sidekiq" },
		"bad in list": func(c *Config) { c.System = "execledger,sidekiq" },
		"empty list":  func(c *Config) { c.System = "execledger," },
		"no chains":   func(c *Config) { c.AuditChains = -1 },
		"chains":      func(c *Config) { c.AuditChains = 1025 },
		"no workers":  func(c *Config) { c.Workers = -1 },
		"too many":    func(c *Config) { c.Workers = 10001 },
		"no duration": func(c *Config) { c.Duration = -time.Second },
		"cooldown":    func(c *Config) { c.RiverFetchCooldown = time.Microsecond },
		"rate < 0":    func(c *Config) { c.Mode, c.Rate = ModeContinuous, -1 },
		"burn rate":   func(c *Config) { c.Mode, c.Rate = ModeBurndown, 100 },
	} {
		c := good
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSystems: --system's names and lists each name every system once,
// baselines first.
func TestSystems(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string][]string{
		SystemExecledger:                  {SystemExecledger},
		SystemRiverAudited:                {SystemRiverAudited},
		SystemBoth:                        {SystemRiver, SystemExecledger},
		SystemAll:                         {SystemRiver, SystemRiverAudited, SystemExecledger},
		"execledger,river-audited":        {SystemRiverAudited, SystemExecledger},
		" river , both ,river":            {SystemRiver, SystemExecledger},
		"river-audited,all":               {SystemRiver, SystemRiverAudited, SystemExecledger},
		"river-audited,river-audited":     {SystemRiverAudited},
		"execledger,river,river-audited ": {SystemRiver, SystemRiverAudited, SystemExecledger},
	} {
		got, err := parseSystems(spec)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", spec, got, err, want)
		}
	}
	for _, spec := range []string{"", ",", "River", "both,redis", "all;river"} {
		if got, err := parseSystems(spec); err == nil || !strings.Contains(err.Error(), "comma-separated") {
			t.Errorf("%q: %v, %v; want an error that lists the systems", spec, got, err)
		}
	}
}

// TestRatios: each ratio is there exactly when both of its systems ran,
// in the text and the JSON report.
func TestRatios(t *testing.T) {
	t.Parallel()
	run := func(sys string, perSecond float64) *Summary {
		return &Summary{System: sys, Mode: ModeBurndown, PerSecond: perSecond, States: map[string]int64{}}
	}
	r := &Report{Mode: ModeBurndown, Runs: []*Summary{run(SystemRiver, 1000), run(SystemRiverAudited, 250), run(SystemExecledger, 500)}}
	r.setRatio()
	if r.Ratio != 0.5 || r.RatioAudited != 2 || r.RatioAuditedRiver != 0.25 {
		t.Fatalf("ratios %v %v %v, want 0.5 2 0.25", r.Ratio, r.RatioAudited, r.RatioAuditedRiver)
	}
	var text strings.Builder
	r.Print(&text)
	for _, line := range []string{"ratio execledger/river (burndown requests/s): 0.500\n",
		"ratio execledger/river-audited (burndown requests/s): 2.000\n", "ratio river-audited/river (burndown requests/s): 0.250\n"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text report without %q:\n%s", line, text.String())
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, member := range []string{`"ratio_execledger_over_river":0.5`, `"ratio_execledger_over_river_audited":2`,
		`"ratio_river_audited_over_river":0.25`} {
		if !strings.Contains(string(js), member) {
			t.Errorf("JSON report without %s: %s", member, js)
		}
	}

	r = &Report{Mode: ModeContinuous, Runs: []*Summary{run(SystemRiverAudited, 250), run(SystemExecledger, 500)}}
	r.setRatio()
	text.Reset()
	r.Print(&text)
	if r.Ratio != 0 || r.RatioAuditedRiver != 0 || r.RatioAudited != 2 ||
		strings.Count(text.String(), "ratio ") != 1 || !strings.Contains(text.String(), "ratio execledger/river-audited (continuous") {
		t.Errorf("without River: ratios %v %v %v, report:\n%s", r.Ratio, r.RatioAudited, r.RatioAuditedRiver, text.String())
	}
}

// TestOfferedRate: with --rate the submitters keep to the schedule: never
// more requests than the rate allows over the window (less when the
// system is slow, which this machine may be).
func TestOfferedRate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var progress strings.Builder
	r, err := Run(ctx, Config{AdminURL: testdb.AdminURL(), Mode: ModeContinuous, System: SystemExecledger,
		Duration: 2 * time.Second, Rate: 40, Submitters: 4, Workers: 8, Interval: 500 * time.Millisecond,
		Stall: 2 * time.Minute, Progress: &progress})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	s := r.Runs[0]
	// Request k is due k/40 s after the start: over the window at most
	// 40·window+1 are due; each submitter may have one due request in hand
	// when the window closes.
	limit := int64(40*s.Seconds) + 1 + int64(s.Submitters)
	if s.Requests < 1 || s.Requests > limit || s.Rate != 40 {
		t.Fatalf("offered 40/s for %.2fs: %d submitted (at most %d), rate %v", s.Seconds, s.Requests, limit, s.Rate)
	}
	var report strings.Builder
	r.Print(&report)
	if !strings.Contains(report.String(), "offered 40/s") {
		t.Errorf("the report does not say the offered rate:\n%s", report.String())
	}
}
