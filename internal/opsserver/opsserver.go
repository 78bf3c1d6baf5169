// Package opsserver serves what operators and orchestrators poll: /healthz
// (the process is up), /readyz (the database answers) and /metrics
// (Prometheus: the queue's depth and age by state, quota use per principal
// from the quota_usage projection, plus Go and process metrics).
package opsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the operations HTTP server.
type Server struct {
	pool       *pgxpool.Pool
	logger     *slog.Logger
	registry   *prometheus.Registry
	registerer prometheus.Registerer // registry, adding the executor label
}

// Config configures the operations server. The zero value is the default.
type Config struct {
	// QuotaTopK is how many principals, those that made the most calls, get
	// execledger_quota_* series of their own; the rest are summed into
	// principal="other". Default 20.
	QuotaTopK int
	// QuotaTimeout bounds the read of the quota projection at each scrape.
	// Default 3s.
	QuotaTimeout time.Duration
	// Label, when set, is added as the constant label executor=Label to
	// every metric registered through Registerer, the server's own queue
	// and quota metrics included: dashboards and alerts tell processes
	// apart by their configured name (serve.label), not by scrape address.
	Label string
}

// DefaultQuotaTopK is Config.QuotaTopK's default.
const DefaultQuotaTopK = 20

func (c Config) withDefaults() Config {
	if c.QuotaTopK <= 0 {
		c.QuotaTopK = DefaultQuotaTopK
	}
	if c.QuotaTimeout <= 0 {
		c.QuotaTimeout = 3 * time.Second
	}
	return c
}

// New returns a Server that reports on the ledger behind pool. Other
// components register their collectors with Registry.
func New(pool *pgxpool.Pool, logger *slog.Logger, cfg Config) *Server {
	cfg = cfg.withDefaults()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var labelled prometheus.Registerer = reg
	if cfg.Label != "" {
		labelled = prometheus.WrapRegistererWith(prometheus.Labels{ExecutorLabel: cfg.Label}, reg)
	}
	labelled.MustRegister(newQueueCollector(pool, logger), newQuotaCollector(pool, logger, cfg.QuotaTopK, cfg.QuotaTimeout))
	return &Server{pool: pool, logger: logger, registry: reg, registerer: labelled}
}

// ExecutorLabel is the constant label Config.Label sets.
const ExecutorLabel = "executor"

// Registry is the registry /metrics serves.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// Registerer is where components register their metrics: the registry,
// adding the executor label when Config.Label is set.
func (s *Server) Registerer() prometheus.Registerer { return s.registerer }

// Handler serves /healthz, /readyz and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.pool.Ping(ctx); err != nil {
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn)}))
	return mux
}

// Serve listens on addr until ctx ends, then shuts down gracefully. ready,
// when not nil, receives the bound address once listening.
func (s *Server) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("opsserver: %w", err)
	}
	return s.ServeListener(ctx, ln, ready)
}

// ServeListener is Serve on a listener the caller bound (execledger dev
// binds its ports before it prints where they are); it closes ln.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, ready func(net.Addr)) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("opsserver: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("opsserver: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("opsserver: %w", err)
	}
	return nil
}
