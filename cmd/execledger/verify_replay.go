package main

// verify --replay: a recorded tier A call run again and compared with its
// attestation (internal/replay); here the flags, the report and the exit
// code.

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/replay"
	"github.com/execledger/execledger/ledger"
)

// runReplay is verify --replay: it checks a recorded tier A call's
// attestation and runs the call again to compare its output and fuel.
func runReplay(ctx context.Context, e *env, request, cfgPath, pubPath string, asJSON bool) error {
	id, err := uuid.Parse(request)
	if err != nil {
		return fail(exitUsage, "%q is not a request id (a UUID)", request)
	}
	cfg, pool, err := e.connectReader(ctx, cfgPath)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	pub, err := verifyKey(cfg, pubPath)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	rec, err := replay.Read(ctx, pool, id)
	if errors.Is(err, replay.ErrNoRequest) {
		return fail(exitNotFound, "no request %s", id)
	}
	if err != nil {
		return fail(exitError, "request %s: %v", id, err)
	}
	st, err := rec.Statement(id, pub)
	if err != nil {
		return fail(exitNotOK, "request %s: not ok: %v", id, err)
	}
	return replayAndReport(ctx, e, cfg, pool, st, rec.Input, attest.PublicKeyID(pub), asJSON)
}

// replayAndReport replays the attested call and prints the comparison;
// an installed skill's module is read through db.
func replayAndReport(ctx context.Context, e *env, cfg config.Config, db ledger.DBTX, st *attest.Statement, input []byte, keyID string, asJSON bool) error {
	rep, err := replay.Run(ctx, cfg.Wasm, db, st, input)
	if err != nil {
		return fail(exitError, "request %s: cannot replay: %v", st.Predicate.RequestID, err)
	}
	rep.KeyID = keyID
	if asJSON {
		if err := printJSON(e, rep); err != nil {
			return err
		}
	} else {
		printReplay(e, rep)
	}
	if !rep.OK {
		return exitCode(exitNotOK) // the report says what differs
	}
	return nil
}

// verifyKey loads the attestation public key: path, else the one
// execledger keygen wrote beside [attest] key_file.
func verifyKey(cfg config.Config, path string) (ed25519.PublicKey, error) {
	if path == "" {
		if cfg.Attest.KeyFile == "" {
			return nil, errors.New("no public key: give --pubkey FILE or set [attest] key_file (its FILE.pub is read)")
		}
		path = cfg.Attest.KeyFile + ".pub"
	}
	return attest.LoadPublicKey(path)
}

func printReplay(e *env, rep replay.Report) {
	w := e.io.out
	fmt.Fprintf(w, "request:      %s\ntool:         %s (tier A)\n", rep.RequestID, rep.Tool)
	fmt.Fprintf(w, "attestation:  signature ok (key %s)\nmodule:       %s, as attested\n", rep.KeyID, rep.ModuleDigest)
	line := func(what string, c bool, recorded, replayed string) {
		if c {
			fmt.Fprintf(w, "%s matches: %s\n", what, recorded)
		} else {
			fmt.Fprintf(w, "%s differs: recorded %s, replayed %s\n", what, recorded, replayed)
		}
	}
	line("outcome", rep.Outcome.Match, rep.Outcome.Recorded, rep.Outcome.Replayed)
	line("output digest", rep.OutputDigest.Match, rep.OutputDigest.Recorded, rep.OutputDigest.Replayed)
	line("fuel", rep.FuelUsed.Match, fuelText(rep.FuelUsed.Recorded), fuelText(rep.FuelUsed.Replayed))
	if rep.OK {
		fmt.Fprintln(w, "ok")
	} else {
		fmt.Fprintln(w, "not ok")
	}
}

func fuelText(f *int64) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprint(*f)
}
