package opsserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/execledger/execledger/internal/opsserver"
	"github.com/execledger/execledger/internal/testdb"
)

// quotaColumns are the counters of ledger.quota_usage the collector
// exports, with their metric (and decision label where there is one) and
// the factor from the column's unit to the metric's.
var quotaColumns = []struct {
	column, metric, decision string
	scale                    float64
}{
	{"calls_allowed", "execledger_quota_calls_total", "allowed", 1},
	{"calls_denied", "execledger_quota_calls_total", "denied", 1},
	{"budget_exhausted", "execledger_quota_budget_exhausted_total", "", 1},
	{"fuel", "execledger_quota_fuel_total", "", 1},
	{"cpu_ms", "execledger_quota_cpu_seconds_total", "", 0.001},
	{"wall_ms", "execledger_quota_wall_seconds_total", "", 0.001},
	{"output_bytes", "execledger_quota_output_bytes_total", "", 1},
	{"egress_connections", "execledger_quota_egress_connections_total", "", 1},
	{"egress_refused", "execledger_quota_egress_refused_connections_total", "", 1},
	{"egress_bytes", "execledger_quota_egress_bytes_total", "", 1},
}

// fillQuotaUsage writes n principals p01…pNN into the quota projection as
// the superuser, principal i having made 10*i calls and distinct amounts
// of everything else, with denials spread over two runs and three
// reasons. rename renames principals after the fact.
func fillQuotaUsage(t *testing.T, db *testdb.DB, n int, rename map[string]string) {
	t.Helper()
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `
INSERT INTO ledger.quota_usage (principal, calls_requested, calls_allowed, calls_denied, budget_exhausted,
    calls_finished, fuel, cpu_ms, wall_ms, output_bytes, egress_connections, egress_refused, egress_bytes, updated_at)
SELECT format('p%s', lpad(i::text, 2, '0')), 10 * i, 7 * i, 3 * i, i, 7 * i, 1000 * i + 1, 17 * i, 29 * i, 100 * i + 3,
       2 * i, i % 3, 4096 * i, now()
FROM generate_series(1, $1) i`, n)
	if err != nil {
		t.Fatal(err)
	}
	// 3*i denials per principal: i for budget_exhausted in run r1, the
	// rest split between policy_denied in r1 and r2 and input_invalid
	// without a run.
	_, err = db.Pool.Exec(ctx, `
INSERT INTO ledger.quota_denials (principal, run_id, reason, denied)
SELECT format('p%s', lpad(i::text, 2, '0')), d.run_id, d.reason, d.n
FROM generate_series(1, $1) i,
     LATERAL (VALUES ('r1', 'budget_exhausted', i), ('r1', 'policy_denied', i - 1), ('r2', 'policy_denied', 1),
                     ('', 'input_invalid', i - 1)) AS d(run_id, reason, n)
WHERE d.n > 0`, n)
	if err != nil {
		t.Fatal(err)
	}
	for from, to := range rename {
		for _, table := range []string{"ledger.quota_usage", "ledger.quota_denials"} {
			if _, err := db.Pool.Exec(ctx, "UPDATE "+table+" SET principal = $2 WHERE principal = $1", from, to); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// scrape gathers the registry of a Server built on db with cfg.
func scrape(t *testing.T, db *testdb.DB, cfg opsserver.Config) map[string]*dto.MetricFamily {
	t.Helper()
	srv := opsserver.New(db.Pool, slog.New(slog.DiscardHandler), cfg)
	families, err := srv.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

// series is every series of a family, keyed by its labels.
func series(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ","
		}
		v := m.GetGauge().GetValue()
		if m.GetCounter() != nil {
			v = m.GetCounter().GetValue()
		}
		out[key] = v
	}
	return out
}

// principalsOf lists the principal labels of a family.
func principalsOf(f *dto.MetricFamily) []string {
	seen := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "principal" {
				seen[l.GetValue()] = true
			}
		}
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func sumWhere(t *testing.T, db *testdb.DB, query string, args ...any) float64 {
	t.Helper()
	var v float64
	if err := db.Pool.QueryRow(context.Background(), query, args...).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestQuotaMetricsTopKAndOther(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	fillQuotaUsage(t, db, 25, nil)
	got := scrape(t, db, opsserver.Config{})

	// p06…p25 made the most calls: each has its own series; p01…p05 are "other".
	var want []string
	for i := 6; i <= 25; i++ {
		want = append(want, fmt.Sprintf("p%02d", i))
	}
	want = append(want, "other")
	sort.Strings(want)
	for _, c := range quotaColumns {
		f := got[c.metric]
		if f == nil {
			t.Fatalf("%s is not exported", c.metric)
		}
		if p := principalsOf(f); fmt.Sprint(p) != fmt.Sprint(want) {
			t.Fatalf("%s principals = %v, want %v", c.metric, p, want)
		}
		s := series(f)
		label := func(principal string) string {
			if c.decision != "" {
				return "decision=" + c.decision + ",principal=" + principal + ","
			}
			return "principal=" + principal + ","
		}
		total, other := 0.0, s[label("other")]
		for _, p := range want {
			total += s[label(p)]
		}
		if wantTotal := c.scale * sumWhere(t, db, "SELECT sum("+c.column+") FROM ledger.quota_usage"); !near(total, wantTotal) {
			t.Errorf("%s %s: series sum to %v, the table to %v", c.metric, c.decision, total, wantTotal)
		}
		wantOther := c.scale * sumWhere(t, db, "SELECT sum("+c.column+") FROM ledger.quota_usage WHERE principal <= 'p05'")
		if !near(other, wantOther) {
			t.Errorf("%s %s: other = %v, want %v", c.metric, c.decision, other, wantOther)
		}
		wantP25 := c.scale * sumWhere(t, db, "SELECT "+c.column+" FROM ledger.quota_usage WHERE principal = 'p25'")
		if !near(s[label("p25")], wantP25) {
			t.Errorf("%s %s: p25 = %v, want %v", c.metric, c.decision, s[label("p25")], wantP25)
		}
	}

	// Denials by reason are summed over runs, per principal label.
	denials := series(got["execledger_quota_denials_total"])
	for _, reason := range []string{"budget_exhausted", "policy_denied", "input_invalid"} {
		total := 0.0
		for k, v := range denials {
			if strings.Contains(k, "reason="+reason+",") {
				total += v
			}
		}
		if wantTotal := sumWhere(t, db, "SELECT sum(denied) FROM ledger.quota_denials WHERE reason = $1", reason); total != wantTotal {
			t.Errorf("denials %s: series sum to %v, the table to %v", reason, total, wantTotal)
		}
	}
	// p25: 25 budget_exhausted (r1), 24 + 1 policy_denied (r1 + r2), 24 input_invalid.
	for reason, n := range map[string]float64{"budget_exhausted": 25, "policy_denied": 25, "input_invalid": 24} {
		if v := denials["principal=p25,reason="+reason+","]; v != n {
			t.Errorf("denials of p25 for %s = %v, want %v", reason, v, n)
		}
	}
	// other: p01…p05 have 1+…+5 = 15 budget_exhausted.
	if v := denials["principal=other,reason=budget_exhausted,"]; v != 15 {
		t.Errorf("denials of other for budget_exhausted = %v, want 15", v)
	}

	if v := series(got["execledger_quota_principals"])[""]; v != 25 {
		t.Errorf("execledger_quota_principals = %v, want 25", v)
	}
	if v := series(got["execledger_quota_up"])[""]; v != 1 {
		t.Errorf("execledger_quota_up = %v, want 1", v)
	}
	for name, f := range got {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "run_id" || l.GetName() == "run" {
					t.Errorf("%s has a run label", name)
				}
			}
		}
	}
}

// TestQuotaMetricsSmallK: K is configurable, and a principal that is
// really named "other" is folded into the other series instead of being
// reported twice (which would fail the whole scrape).
func TestQuotaMetricsSmallK(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	fillQuotaUsage(t, db, 5, map[string]string{"p05": "other"})
	got := scrape(t, db, opsserver.Config{QuotaTopK: 2})
	s := series(got["execledger_quota_calls_total"])
	// Ranked by calls: other (the former p05, 50), p04 (40); p03…p01 are summed.
	want := map[string]float64{
		"decision=allowed,principal=other,": 7 * (5 + 3 + 2 + 1),
		"decision=denied,principal=other,":  3 * (5 + 3 + 2 + 1),
		"decision=allowed,principal=p04,":   7 * 4,
		"decision=denied,principal=p04,":    3 * 4,
	}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Fatalf("execledger_quota_calls_total = %v, want %v", s, want)
	}
}

// TestQuotaMetricsEmptyProjection: with no use yet, the other series is
// there with zeros, so that dashboards show 0 rather than no data.
func TestQuotaMetricsEmptyProjection(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	got := scrape(t, db, opsserver.Config{})
	if s := series(got["execledger_quota_calls_total"]); len(s) != 2 || s["decision=allowed,principal=other,"] != 0 {
		t.Fatalf("execledger_quota_calls_total = %v", s)
	}
	if v := series(got["execledger_quota_principals"])[""]; v != 0 {
		t.Errorf("execledger_quota_principals = %v, want 0", v)
	}
}

// TestQuotaMetricsUnreadable: a read that fails, or that waits longer
// than the timeout (here on a lock), reports execledger_quota_up 0 and
// leaves the rest of the scrape intact.
func TestQuotaMetricsUnreadable(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	fillQuotaUsage(t, db, 3, nil)
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE ledger.quota_usage IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	// Should the scrape wait for the lock, despite its timeout, the lock
	// goes after two minutes and the read then succeeds: quota_up 1 fails
	// the test below instead of a hang.
	release := time.AfterFunc(2*time.Minute, func() { _ = tx.Rollback(ctx) })
	defer release.Stop()
	got := scrape(t, db, opsserver.Config{QuotaTimeout: 300 * time.Millisecond})
	if v := series(got["execledger_quota_up"])[""]; v != 0 || got["execledger_quota_up"] == nil {
		t.Errorf("execledger_quota_up = %v, want 0", v)
	}
	if got["execledger_quota_calls_total"] != nil {
		t.Errorf("quota counters exported without a read: %v", series(got["execledger_quota_calls_total"]))
	}
	if v := series(got["execledger_database_up"])[""]; v != 1 {
		t.Errorf("execledger_database_up = %v, want 1: the queue was readable", v)
	}
	if got["go_goroutines"] == nil {
		t.Error("the rest of the scrape is missing")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if v := series(scrape(t, db, opsserver.Config{})["execledger_quota_up"])[""]; v != 1 {
		t.Errorf("execledger_quota_up after the lock = %v, want 1", v)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}
