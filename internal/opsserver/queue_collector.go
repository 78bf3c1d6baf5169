package opsserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// queueCollector reads the queue's depth and oldest entry per state at
// scrape time. The queue holds only requests that are not final, so the
// query stays cheap however long the log grows.
type queueCollector struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	depth  *prometheus.Desc
	age    *prometheus.Desc
	up     *prometheus.Desc
}

func newQueueCollector(pool *pgxpool.Pool, logger *slog.Logger) *queueCollector {
	return &queueCollector{
		pool:   pool,
		logger: logger,
		depth:  prometheus.NewDesc("execledger_queue_depth", "Requests that are not final, by state.", []string{"state"}, nil),
		age:    prometheus.NewDesc("execledger_queue_oldest_seconds", "Age of the oldest request in each state.", []string{"state"}, nil),
		up:     prometheus.NewDesc("execledger_database_up", "1 when the last scrape could read the database.", nil, nil),
	}
}

const queryQueueStats = `SELECT s.state, count(q.id), coalesce(extract(epoch FROM clock_timestamp() - min(q.available_at)), 0)
FROM unnest(ARRAY['pending', 'awaiting_approval', 'running']) AS s(state)
LEFT JOIN ledger.queue q ON q.state = s.state
GROUP BY s.state`

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.age
	ch <- c.up
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rows, err := c.pool.Query(ctx, queryQueueStats)
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var state string
			var n int64
			var age float64
			if err = rows.Scan(&state, &n, &age); err != nil {
				break
			}
			ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), state)
			ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age, state)
		}
		if err == nil {
			err = rows.Err()
		}
	}
	up := 1.0
	if err != nil {
		c.logger.Warn("queue metrics", slog.Any("error", err))
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}
