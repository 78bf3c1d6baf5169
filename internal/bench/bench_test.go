package bench

import (
	"context"
	"math"
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
// report ordered latency percentiles and a ratio. Without the river build
// tag it runs Execledger alone.
func TestRun(t *testing.T) {
	t.Parallel()
	system, want := SystemBoth, []string{SystemRiver, SystemExecledger}
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
			if r.Ratio <= 0 {
				t.Errorf("ratio %v, want > 0", r.Ratio)
			}
			var out strings.Builder
			r.Print(&out)
			if !strings.Contains(out.String(), "ratio execledger/river ("+mode+" requests/s)") {
				t.Errorf("report without the ratio:\n%s", out.String())
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
	for _, sys := range []string{SystemRiver, SystemBoth} {
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
