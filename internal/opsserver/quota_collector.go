package opsserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// OtherPrincipal labels the series that sums every principal outside the
// top K.
const OtherPrincipal = "other"

// quotaCollector exports the quota_usage projection at scrape time with
// bounded cardinality: the K principals that made the most calls get a
// series each, all others are summed into principal="other", and runs are
// never a label (their exact figures are in ledger.quota_usage_runs).
//
// The values are counters read from the projection, so they only grow,
// with one exception: when a principal enters or leaves the top K its use
// moves between its own series and "other", which rate() and increase()
// read as a counter reset of the series that shrank.
type quotaCollector struct {
	pool    *pgxpool.Pool
	logger  *slog.Logger
	topK    int
	timeout time.Duration

	calls, denials, exhausted, fuel, cpu, wall, output *prometheus.Desc
	egressConns, egressRefused, egressBytes            *prometheus.Desc
	principals, up, duration                           *prometheus.Desc
}

func newQuotaCollector(pool *pgxpool.Pool, logger *slog.Logger, topK int, timeout time.Duration) *quotaCollector {
	p := []string{"principal"}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("execledger_quota_"+name, help, labels, nil)
	}
	return &quotaCollector{
		pool: pool, logger: logger, topK: topK, timeout: timeout,
		calls:         desc("calls_total", "Calls authorized to run (decision=allowed) or ended denied (decision=denied), by principal.", "principal", "decision"),
		denials:       desc("denials_total", "Denied calls by principal and reason (the error kind), summed over runs.", "principal", "reason"),
		exhausted:     desc("budget_exhausted_total", "Calls denied because their run's call budget was used up, by principal.", p...),
		fuel:          desc("fuel_total", "WebAssembly fuel consumed by finished calls, by principal.", p...),
		cpu:           desc("cpu_seconds_total", "CPU time of finished calls, by principal.", p...),
		wall:          desc("wall_seconds_total", "Wall-clock time of finished calls, by principal.", p...),
		output:        desc("output_bytes_total", "Output bytes of finished calls, by principal.", p...),
		egressConns:   desc("egress_connections_total", "Outbound connections of calls, by principal.", p...),
		egressRefused: desc("egress_refused_connections_total", "Outbound connections refused by the egress policy, by principal.", p...),
		egressBytes:   desc("egress_bytes_total", "Bytes sent and received over outbound connections, by principal.", p...),
		principals:    desc("principals", "Principals in the quota projection; all but the top K are summed into principal=\"other\"."),
		up:            desc("up", "1 when the last scrape could read the quota projection."),
		duration:      desc("scrape_duration_seconds", "How long the last scrape's read of the quota projection took."),
	}
}

// quotaRow is one principal label's sums: a top-K principal's own row, or
// the sum of all others.
type quotaRow struct {
	label                                   string
	allowed, denied, exhausted, fuel        int64
	cpuMS, wallMS, outputBytes              int64
	egressConns, egressRefused, egressBytes int64
	principals                              int64
	denials                                 map[string]int64
}

// queryQuotaUsage reads the whole quota projection in one statement: the
// principal table (one row per principal) ranked by calls requested and
// grouped into the top $1 and $2 (other), and the denials table summed per
// principal and reason, then per label. A real principal named "other" is
// folded into the same group, so no label is ever reported twice.
//
// Its cost is a scan of both tables: quota_denials has a row per run and
// reason with denials, about 0.2 s per million rows. Summing per principal
// before joining keeps the join as small as the principal table.
const queryQuotaUsage = `WITH labelled AS MATERIALIZED (
    SELECT CASE WHEN row_number() OVER (ORDER BY u.calls_requested DESC, u.principal) <= $1
                THEN u.principal ELSE $2 END AS label,
           u.*
    FROM ledger.quota_usage u
), usage AS (
    SELECT label, sum(calls_allowed)::bigint AS calls_allowed, sum(calls_denied)::bigint AS calls_denied,
           sum(budget_exhausted)::bigint AS budget_exhausted, sum(fuel)::bigint AS fuel,
           sum(cpu_ms)::bigint AS cpu_ms, sum(wall_ms)::bigint AS wall_ms, sum(output_bytes)::bigint AS output_bytes,
           sum(egress_connections)::bigint AS egress_connections, sum(egress_refused)::bigint AS egress_refused,
           sum(egress_bytes)::bigint AS egress_bytes, count(*) AS principals
    FROM labelled
    GROUP BY label
), denials AS (
    SELECT label, jsonb_object_agg(reason, denied) AS by_reason
    FROM (SELECT l.label, d.reason, sum(d.denied)::bigint AS denied
          FROM (SELECT principal, reason, sum(denied) AS denied FROM ledger.quota_denials GROUP BY principal, reason) d
          JOIN labelled l USING (principal)
          GROUP BY l.label, d.reason) per_reason
    GROUP BY label
)
SELECT u.label, u.calls_allowed, u.calls_denied, u.budget_exhausted, u.fuel, u.cpu_ms, u.wall_ms, u.output_bytes,
       u.egress_connections, u.egress_refused, u.egress_bytes, u.principals, coalesce(d.by_reason, '{}')
FROM usage u LEFT JOIN denials d USING (label)`

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.calls, c.denials, c.exhausted, c.fuel, c.cpu, c.wall, c.output,
		c.egressConns, c.egressRefused, c.egressBytes, c.principals, c.up, c.duration} {
		ch <- d
	}
}

// Collect reports the projection, or only execledger_quota_up 0 when it
// cannot be read: a failing read never fails the scrape.
func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	rows, err := c.read()
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil {
		c.logger.Warn("quota metrics", slog.Any("error", err))
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	var principals int64
	for _, r := range rows {
		principals += r.principals
		c.collectRow(ch, r)
	}
	ch <- prometheus.MustNewConstMetric(c.principals, prometheus.GaugeValue, float64(principals))
}

// read runs queryQuotaUsage. The "other" row is always there, zero when
// every principal is in the top K, so that its series do not come and go.
func (c *quotaCollector) read() ([]quotaRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	rows, err := c.pool.Query(ctx, queryQuotaUsage, c.topK, OtherPrincipal)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []quotaRow
	other := false
	for rows.Next() {
		var r quotaRow
		if err := rows.Scan(&r.label, &r.allowed, &r.denied, &r.exhausted, &r.fuel, &r.cpuMS, &r.wallMS,
			&r.outputBytes, &r.egressConns, &r.egressRefused, &r.egressBytes, &r.principals, &r.denials); err != nil {
			return nil, err
		}
		other = other || r.label == OtherPrincipal
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !other {
		out = append(out, quotaRow{label: OtherPrincipal})
	}
	return out, nil
}

func (c *quotaCollector) collectRow(ch chan<- prometheus.Metric, r quotaRow) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{r.label}, labels...)...)
	}
	counter(c.calls, float64(r.allowed), "allowed")
	counter(c.calls, float64(r.denied), "denied")
	for reason, n := range r.denials {
		counter(c.denials, float64(n), reason)
	}
	counter(c.exhausted, float64(r.exhausted))
	counter(c.fuel, float64(r.fuel))
	counter(c.cpu, float64(r.cpuMS)/1000)
	counter(c.wall, float64(r.wallMS)/1000)
	counter(c.output, float64(r.outputBytes))
	counter(c.egressConns, float64(r.egressConns))
	counter(c.egressRefused, float64(r.egressRefused))
	counter(c.egressBytes, float64(r.egressBytes))
}
