package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/console"
	"github.com/execledger/execledger/ledger"
)

func newConsoleCmd(e *env) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console: people sign in with their own PostgreSQL login",
		Long: `Console serves the web console on [console] listen (default 127.0.0.1:9470): requests and their
proofs, approvals, the audit trail, quotas, skills, the transparency log and health. Each person
signs in with their own PostgreSQL login and password; every page and action runs as that login,
so row security and the ledger_* roles decide what each sees and may do. The console connects to
[console] login_url, or DATABASE_URL without its user and password; with database.replica_url
(EXECLEDGER_DATABASE_REPLICA_URL) set, the pages read from that standby as the same login
(read-only sessions) and the actions (approve, deny, skill lifecycle) go to the primary. It checks attestations and
inclusion proofs with [console] attest_keys and log_key (default: attest.key_file.pub and
sealer.note_key_file.pub when they exist). A listen address other than loopback needs TLS.`,
		Example: `  DATABASE_URL=postgres://db.internal/execledger execledger console
  EXECLEDGER_CONSOLE_LOG_KEY=log.key.pub EXECLEDGER_CONSOLE_ATTEST_KEYS=attest.key.pub execledger console --listen 127.0.0.1:9470`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := e.loadConfig(e.config)
			if err != nil {
				return fail(exitError, "%v", err)
			}
			if cmd.Flags().Changed("listen") {
				cfg.Console.Listen = listen
				if err := cfg.Validate(); err != nil {
					return fail(exitUsage, "%v", err)
				}
			}
			logger := e.logger(cfg)
			keys, err := consoleKeys(cfg, nil, "", logger)
			if err != nil {
				return fail(exitError, "%v", err)
			}
			if err := runConsole(cmd.Context(), cfg, keys, logger, nil, nil); err != nil && cmd.Context().Err() == nil {
				return fail(exitError, "%v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "serve at `ADDR` (host:port); default console.listen")
	e.configFlag(cmd)
	return cmd
}

// runConsole serves the console until ctx ends, on ln when it is not nil
// (bound already), else on console.listen; ready, when not nil, gets its
// URL once it listens.
func runConsole(ctx context.Context, cfg config.Config, keys console.Keys, logger *slog.Logger, ready func(url string), ln net.Listener) error {
	loginURL, err := cfg.ConsoleLoginURL()
	if err != nil {
		return err
	}
	replicaURL, err := cfg.ConsoleReplicaURL()
	if err != nil {
		return err
	}
	c := cfg.Console
	srv, err := console.New(console.Options{LoginURL: loginURL, ReplicaURL: replicaURL, IdleTimeout: c.IdleTimeout.Duration, SessionConns: c.SessionConns,
		MaxSessions: c.MaxSessions, SignInAttempts: c.SignInAttempts, AllowUncheckedPasswords: c.AllowUncheckedPasswords,
		Keys: keys, Logger: logger})
	if err != nil {
		return err
	}
	serveOn := func(ready func(net.Addr)) error {
		if ln != nil {
			return srv.ServeListener(ctx, ln, c.TLSCertFile, c.TLSKeyFile, ready)
		}
		return srv.Serve(ctx, c.Listen, c.TLSCertFile, c.TLSKeyFile, ready)
	}
	return serveOn(func(a net.Addr) {
		scheme := "http"
		if c.TLSCertFile != "" {
			scheme = "https"
		}
		u := fmt.Sprintf("%s://%s/", scheme, a)
		logger.Info("console", slog.String("url", u))
		if ready != nil {
			ready(u)
		}
	})
}

// consoleKeys loads the keys the console checks signatures with: the
// [console] keys, else the public halves of the keys serve uses (signer,
// when serve has loaded it; else attest.key_file.pub), else none.
func consoleKeys(cfg config.Config, signer *attest.Signer, noteKeyFile string, logger *slog.Logger) (console.Keys, error) {
	var k console.Keys
	c := cfg.Console
	if noteKeyFile == "" {
		noteKeyFile = cfg.Sealer.NoteKeyFile
	}
	logKey := c.LogKey
	if logKey == "" && noteKeyFile != "" && exists(noteKeyFile+".pub") {
		logKey = noteKeyFile + ".pub"
	}
	if logKey != "" {
		v, err := ledger.LoadNoteVerifier(logKey)
		if err != nil {
			return k, fmt.Errorf("console.log_key: %w", err)
		}
		k.Log = v
	}
	attestKeys := c.AttestKeys
	if len(attestKeys) == 0 {
		switch {
		case signer != nil:
			k.Attestation = []ed25519.PublicKey{signer.PublicKey()}
		case cfg.Attest.KeyFile != "" && exists(cfg.Attest.KeyFile+".pub"):
			attestKeys = []string{cfg.Attest.KeyFile + ".pub"}
		}
	}
	for _, f := range attestKeys {
		pub, err := attest.LoadPublicKey(f)
		if err != nil {
			return k, fmt.Errorf("console.attest_keys: %w", err)
		}
		k.Attestation = append(k.Attestation, pub)
	}
	witnessKeys := c.WitnessKeys
	if len(witnessKeys) == 0 {
		witnessKeys = cfg.Sealer.WitnessKeys
	}
	for _, f := range witnessKeys {
		v, err := ledger.LoadWitnessVerifier(f)
		if err != nil {
			return k, fmt.Errorf("console.witness_keys: %w", err)
		}
		k.Witnesses = append(k.Witnesses, v)
	}
	if k.Log == nil {
		logger.Warn("console: no log key (console.log_key): checkpoint signatures are not checked")
	}
	if len(k.Attestation) == 0 {
		logger.Warn("console: no attestation key (console.attest_keys): attestation signatures are not checked")
	}
	return k, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
