package executor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// TestMain doubles as a real executor process for the chaos tests: with
// EXECLEDGER_CHAOS_CHILD set, the test binary runs an executor against
// DATABASE_URL until it is signalled (or killed), instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("EXECLEDGER_CHAOS_CHILD") != "" {
		os.Exit(chaosChild())
	}
	os.Exit(m.Run())
}

func chaosChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fail := func(err error) int {
		logger.Error("chaos child", slog.Any("error", err))
		return 1
	}
	seed, err := os.ReadFile(os.Getenv("CHAOS_KEY"))
	if err != nil {
		return fail(err)
	}
	pol, err := policy.FromSources([]policy.Source{{Name: "test.cedar", Text: []byte(testPolicy)}})
	if err != nil {
		return fail(err)
	}
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		return fail(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	lease := 2 * time.Second
	if s := os.Getenv("CHAOS_LEASE"); s != "" {
		if lease, err = time.ParseDuration(s); err != nil {
			return fail(err)
		}
	}
	x, err := New(pool, Config{Label: os.Getenv("CHAOS_LABEL"), Lease: lease, RescueInterval: 200 * time.Millisecond,
		PollInterval: 200 * time.Millisecond, Workers: 32, ClaimBatch: 16},
		pol, attest.NewSigner(ed25519.NewKeyFromSeed(seed)), logger, Echo{}, Sleep{}, journal{path: os.Getenv("CHAOS_JOURNAL")})
	if err != nil {
		return fail(err)
	}
	// CHAOS_NOTE_KEY: also run the projection engine, as serve does: the
	// read models and the Merkle log's sealer, signing checkpoints.
	engineCtx, stopEngine := context.WithCancel(ctx)
	defer stopEngine()
	engineDone := make(chan struct{})
	if path := os.Getenv("CHAOS_NOTE_KEY"); path != "" {
		signer, err := ledger.LoadNoteSigner(path)
		if err != nil {
			return fail(err)
		}
		sealer := ledger.NewSealer(ledger.SealerConfig{Signer: signer, CheckpointInterval: 200 * time.Millisecond,
			Logger: logger.With("component", "sealer")})
		eng, err := projector.New(pool, projector.Config{PollInterval: 100 * time.Millisecond, Logger: logger},
			append(projector.ReadModels(), projector.Sealer(sealer))...)
		if err != nil {
			return fail(err)
		}
		go func() { defer close(engineDone); _ = eng.Run(engineCtx) }() // returns when ctx ends; database errors are retried
	} else {
		close(engineDone)
	}
	err = x.Run(ctx)
	stopEngine()
	<-engineDone
	if err != nil {
		return fail(err)
	}
	return 0
}

// journal is a tool that is not safe to repeat: each run appends a line to
// a file before it works, so a test can count how often each request ran.
type journal struct{ path string }

func (journal) Name() string                               { return "test.journal" }
func (journal) Executor() string                           { return "builtin" }
func (journal) Tier() string                               { return "builtin" }
func (journal) SafeToRepeat() bool                         { return false }
func (journal) Prepare(context.Context, Call) (any, error) { return nil, nil }

func (j journal) Run(ctx context.Context, c Call) Result {
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_SYNC, 0o644)
	if err != nil {
		return failure("runtime_failure", err.Error())
	}
	_, err = fmt.Fprintf(f, "%s %d\n", c.RequestID, c.Attempt)
	f.Close()
	if err != nil {
		return failure("runtime_failure", err.Error())
	}
	var in struct {
		MS int `json:"ms"`
	}
	_ = json.Unmarshal(c.Input, &in)
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
		return Result{Output: json.RawMessage(`{"journaled":true}`)}
	case <-ctx.Done():
		return interrupted(ctx, "test.journal")
	}
}
