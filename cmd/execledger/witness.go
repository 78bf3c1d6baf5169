package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/witness"
)

// witness is the witness protocol's command (internal/witness): flags,
// printing each pass, and the exit codes.

// witnessFlags are witness's flags.
type witnessFlags struct {
	logKey, key, state string
	once               bool
	interval           time.Duration
}

func newWitnessCmd(e *env) *cobra.Command {
	var f witnessFlags
	cmd := &cobra.Command{
		Use:   "witness --log-key K --key WITNESS_KEY --state FILE",
		Short: "Check that the log's newest checkpoint extends the last one this witness accepted, then cosign it",
		Long: `Witness is run by someone other than the log's operator, as an auditor login. Each pass it
reads the log's newest checkpoint, checks that the tree it commits to extends the one the
witness accepted before (--state; trust on first use when missing or empty), and only then
cosigns it (C2SP tlog-cosignature) and moves its state. It exits 3 when it refuses a
checkpoint: rollback, fork, inconsistent, bad signature. Without --once it passes every
--interval until stopped.`,
		Example: `  execledger witness --log-key log.key.pub --key witness.key --state witness.state --once
  execledger witness --log-key log.key.pub --key witness.key --state witness.state --interval 30s --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWitness(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.logKey, "log-key", "", "the log's verifier `KEY`: the FILE.pub that execledger keygen --note writes, or the key text")
	fl.StringVar(&f.key, "key", "", "the witness's signer key `FILE` (execledger keygen --witness writes it)")
	fl.StringVar(&f.state, "state", "", "the state `FILE`: the last checkpoint the witness accepted (missing or empty: trust on first use)")
	fl.BoolVar(&f.once, "once", false, "one pass, then exit")
	fl.DurationVar(&f.interval, "interval", 5*time.Second, "time between passes")
	e.jsonFlag(cmd, "print a JSON object per pass")
	e.configFlag(cmd)
	return cmd
}

func runWitness(ctx context.Context, e *env, f witnessFlags) error {
	for _, fl := range []struct{ name, v string }{{"--log-key", f.logKey}, {"--key", f.key}, {"--state", f.state}} {
		if fl.v == "" {
			return fail(exitUsage, "witness needs %s", fl.name)
		}
	}
	if f.interval <= 0 {
		return fail(exitUsage, "--interval must be positive")
	}
	w, err := witness.New(f.logKey, f.key, f.state)
	if err != nil {
		return fail(exitError, "witness: %v", err)
	}
	cfg, err := e.loadConfig(e.config)
	if err == nil && cfg.Database.URL == "" {
		err = errNoDatabase
	}
	if err != nil {
		return fail(exitError, "witness: %v", err)
	}
	r := &witness.Runner{Witness: w, Once: f.once, Interval: f.interval,
		Connect: func(ctx context.Context) (*pgxpool.Pool, error) {
			pool, err := openPool(ctx, cfg)
			if err == nil {
				if err = e.checkDatabase(ctx, pool); err != nil {
					pool.Close()
					return nil, err
				}
			}
			return pool, err
		},
		Report: func(p witness.Pass) { reportWitnessPass(e, w, p) },
		Logger: e.logger(cfg).With(slog.String("component", "witness"))}
	err = r.Run(ctx)
	var ref *witness.Refusal
	switch {
	case errors.As(err, &ref):
		return fail(exitNotOK, "witness %v", err)
	case err != nil:
		return fail(exitError, "witness: %v", err)
	}
	return nil
}

// reportWitnessPass prints p: one JSON object with --json, else one line
// (a refusal's line goes to stderr, from runWitness).
func reportWitnessPass(e *env, w *witness.Witness, p witness.Pass) {
	if e.json {
		_ = json.NewEncoder(e.io.out).Encode(p)
		return
	}
	out := e.io.out
	switch {
	case p.Result == witness.ResultNoCheckpoint:
		fmt.Fprintf(out, "witness: the log %s has no checkpoint yet; nothing to cosign\n", p.Origin)
	case p.Result == witness.ResultNoNewCheckpoint:
		fmt.Fprintf(out, "witness: no new checkpoint: %s is still at size %d root %s\n", p.Origin, p.Size, witness.Base64(p.Root))
	case p.Result == witness.ResultCosigned && p.TrustOnFirstUse:
		fmt.Fprintf(out, "witness: TRUST ON FIRST USE: no state in %s, so checkpoint %s size %d root %s was accepted on its log signature alone, without a consistency proof; cosigned as %s\n",
			w.State(), p.Origin, p.Size, witness.Base64(p.Root), p.Witness)
	case p.Result == witness.ResultCosigned:
		fmt.Fprintf(out, "witness: checkpoint %s size %d root %s is consistent with size %d root %s (%d proof hashes); cosigned as %s\n",
			p.Origin, p.Size, witness.Base64(p.Root), p.StateSize, witness.Base64(p.StateRoot), p.ProofHashes, p.Witness)
	}
}
