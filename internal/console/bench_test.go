//go:build unix

package console_test

import (
	"context"
	"net/http"
	"net/url"
	"os"

	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/testdb"
)

// BenchmarkPages renders console pages over HTTPS against a ledger of a
// million requests (EXECLEDGER_CONSOLE_BENCH_REQUESTS to change), as an
// auditor (every row) and as a submitter (row security narrows to its
// principal), and reports the median and p95 of each page's time to the
// last byte. The rows are written to the requests read model directly:
// what is measured is reading it.
//
//	go test -run '^$' -bench Pages -benchtime 200x ./internal/console/
func BenchmarkPages(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("EXECLEDGER_CONSOLE_BENCH_REQUESTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	w := &world{db: testdb.New(b)}
	u, _ := url.Parse(w.db.URL)
	u.User = nil
	w.loginURL = u.String()
	w.alice = w.newLogin(b, "alice", "ledger_submitter")
	w.audrey = w.newLogin(b, "", "ledger_auditor")
	w.carol = w.newLogin(b, "carol", "ledger_approver")
	ctx := context.Background()
	start := time.Now()
	// 100 principals (alice is one), a run per 50 requests, a mix of
	// states, spread over 30 days.
	if _, err := w.db.Pool.Exec(ctx, `
INSERT INTO ledger.request_status (id, principal, tool, run_id, idempotency_key, input_digest, state, error_kind, error,
                                   submitted_at, finished_at)
SELECT gen_random_uuid(),
       CASE WHEN i % 100 = 0 THEN 'alice' ELSE 'p' || (i % 100) END,
       CASE WHEN i % 3 = 0 THEN 'sleep' ELSE 'echo' END,
       'run-' || (i / 50), 'key-' || i, sha256(i::text::bytea),
       s.state, CASE s.state WHEN 'failed' THEN 'runtime_failure' WHEN 'denied' THEN 'policy_denied' END,
       CASE WHEN s.state IN ('failed', 'denied') THEN 'bench' END,
       t, CASE WHEN s.state IN ('succeeded', 'failed', 'denied') THEN t + interval '20 ms' END
FROM generate_series(1, $1) AS i,
     LATERAL (SELECT CASE WHEN i % 97 = 0 THEN 'failed' WHEN i % 89 = 0 THEN 'denied' WHEN i % 1000 = 1 THEN 'pending'
                          WHEN i % 5000 = 2 THEN 'awaiting_approval' ELSE 'succeeded' END AS state,
                     now() - interval '30 days' * (1 - i::float8 / $1) AS t) s`, n); err != nil {
		b.Fatal(err)
	}
	// The requests that are not final are in the queue too.
	if _, err := w.db.Pool.Exec(ctx, `INSERT INTO ledger.queue (id, state, available_at)
SELECT id, state, submitted_at FROM ledger.request_status WHERE state IN ('pending', 'awaiting_approval')`); err != nil {
		b.Fatal(err)
	}
	if _, err := w.db.Pool.Exec(ctx, "ANALYZE ledger.request_status, ledger.queue"); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d requests written in %s", n, time.Since(start).Round(time.Millisecond))
	ts := newTestServer(b, w.server(b, nil))
	auditor := newClient(b, ts)
	auditor.mustSignIn(w.audrey)
	submitter := newClient(b, ts)
	submitter.mustSignIn(w.alice)
	approver := newClient(b, ts)
	approver.mustSignIn(w.carol)

	// A cursor from the middle of the list: a deep page.
	var mid string
	if err := w.db.Pool.QueryRow(ctx, `SELECT to_char(submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '_' || id
FROM ledger.request_status ORDER BY submitted_at DESC, id DESC OFFSET $1 LIMIT 1`, n/2).Scan(&mid); err != nil {
		b.Fatal(err)
	}
	var one, run, key string
	if err := w.db.Pool.QueryRow(ctx, `SELECT id::text, run_id, idempotency_key FROM ledger.request_status
WHERE principal = 'p7' ORDER BY submitted_at LIMIT 1 OFFSET 100`).Scan(&one, &run, &key); err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct {
		name string
		c    *client
		path string
	}{
		{"auditor/requests", auditor, "/requests"},
		{"auditor/requests-deep-page", auditor, "/requests?after=" + url.QueryEscape(mid)},
		{"auditor/requests-principal", auditor, "/requests?principal=p7"},
		{"auditor/requests-failed", auditor, "/requests?state=failed"},
		{"auditor/requests-run", auditor, "/requests?principal=p7&run=" + run},
		{"auditor/requests-key", auditor, "/requests?principal=p7&key=" + key},
		{"auditor/requests-run-only", auditor, "/requests?run=" + run},
		{"auditor/requests-pending", auditor, "/requests?state=pending"},
		{"auditor/requests-timed-out", auditor, "/requests?error_kind=timed_out"},
		{"auditor/requests-live", auditor, "/requests?fragment=rows"},
		{"auditor/request", auditor, "/requests/" + one},
		{"auditor/request-live", auditor, "/requests/" + one + "/live"},
		{"auditor/approvals", auditor, "/approvals"},
		{"approver/approvals", approver, "/approvals"},
		{"submitter/requests", submitter, "/requests"},
		{"submitter/requests-failed", submitter, "/requests?state=failed"},
	} {
		b.Run(p.name, func(b *testing.B) {
			code, body := p.c.get(p.path)
			if code != http.StatusOK || (strings.Contains(p.path, "/requests?") || p.path == "/requests") && !strings.Contains(p.path, "timed_out") &&
				len(requestLink.FindAllString(body, -1)) == 0 {
				b.Fatalf("%s: %d, %d rows\n%s", p.path, code, len(requestLink.FindAllString(body, -1)), body)
			}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if code, _ := p.c.get(p.path); code != http.StatusOK {
					b.Fatalf("%s: %d", p.path, code)
				}
				times = append(times, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}
