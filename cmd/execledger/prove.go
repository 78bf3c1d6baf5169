package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/export"
)

// exitNoneSealed (4): none of the request's events is under a published
// checkpoint yet; like a --wait that ended early, trying later helps.
const exitNoneSealed = exitTimeout

// provedEvent is one event of prove's output; in --json, one element.
type provedEvent struct {
	Stream    string  `json:"stream"`
	Version   int64   `json:"version"`
	Type      string  `json:"type"`
	LeafIndex *uint64 `json:"leaf_index"`
	// Status: "proved", "not yet sealed" (not under the newest published
	// checkpoint) or "bytes changed" (the event does not hash to the leaf
	// the log sealed).
	Status string `json:"status"`
	Proof  string `json:"proof,omitempty"` // the C2SP tlog-proof
	File   string `json:"file,omitempty"`  // where --out writes it
}

func newProveCmd(e *env) *cobra.Command {
	var outDir string
	cmd := &cobra.Command{
		Use:   "prove ID",
		Short: "Prove each event of a request against the newest published checkpoint (C2SP tlog-proof files)",
		Long: `Prove prints each of a request's events' inclusion proof against the newest published
checkpoint, as a C2SP tlog-proof carrying the event's canonical encoding: each can be checked
with the log key alone. It exits 3 when an event's bytes changed, 4 when none of the events is
under a published checkpoint yet, 5 when there is no such request.`,
		Example: `  execledger prove 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80
  execledger prove 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --out proofs --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProve(cmd.Context(), e, args[0], outDir)
		},
	}
	cmd.Flags().StringVar(&outDir, "out", "", "write each proof to `DIR`/v<version>-<type>.tlog-proof")
	e.jsonFlag(cmd, "print a JSON array")
	e.configFlag(cmd)
	return cmd
}

// runProve proves each event of a request against the newest published
// checkpoint, as C2SP tlog-proofs that carry the event's canonical
// encoding: each can be checked with the log key alone.
func runProve(ctx context.Context, e *env, arg, outDir string) error {
	id, err := uuid.Parse(arg)
	if err != nil {
		return fail(exitUsage, "prove: %q is not a request id (a UUID)", arg)
	}
	_, pool, err := e.connectReader(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	ps, err := export.Prove(ctx, pool, id.String())
	if errors.Is(err, export.ErrNoRequest) {
		return fail(exitNotFound, "prove: no request %s", id)
	}
	if err != nil {
		return fail(exitError, "prove: %v", err)
	}
	evs := provedEvents(ps, outDir)
	if outDir != "" {
		if err := writeProofs(outDir, evs); err != nil {
			return fail(exitError, "prove: %v", err)
		}
	}
	if e.json {
		if err := printJSON(e, evs); err != nil {
			return err
		}
	} else {
		printProofs(e, ps, evs, outDir)
	}
	for _, ev := range evs {
		if ev.Status == "bytes changed" {
			return exitCode(exitNotOK) // the event's line says it
		}
	}
	if ps.Provable() == 0 {
		return fail(exitNoneSealed, "prove: no event of request %s is under a published checkpoint yet; try again in a few seconds", id)
	}
	return nil
}

func provedEvents(ps export.Proofs, dir string) []provedEvent {
	evs := make([]provedEvent, len(ps.Events))
	for i, p := range ps.Events {
		ev := provedEvent{Stream: p.Event.Stream, Version: p.Event.Version, Type: p.Event.Type, LeafIndex: p.Leaf, Status: "not yet sealed"}
		switch {
		case p.Mismatch:
			ev.Status = "bytes changed"
		case p.Proof != nil:
			ev.Status, ev.Proof = "proved", string(p.Proof.Marshal())
			ev.File = filepath.Join(dir, fmt.Sprintf("v%d-%s.tlog-proof", p.Event.Version, p.Event.Type))
		}
		evs[i] = ev
	}
	return evs
}

func writeProofs(dir string, evs []provedEvent) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.Proof == "" {
			continue
		}
		if _, err := writeFileAtomic(ev.File, true, func(w io.Writer) error {
			_, err := io.WriteString(w, ev.Proof)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func printProofs(e *env, ps export.Proofs, evs []provedEvent, dir string) {
	w := e.io.out
	if c := ps.Checkpoint; c != nil {
		fmt.Fprintf(w, "checkpoint %d %s (origin %s, %d cosignatures)\n", c.Size, base64.StdEncoding.EncodeToString(c.Root), c.Origin, len(c.Cosignatures))
	} else {
		fmt.Fprintln(w, "the log has no published checkpoint yet")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTYPE\tLEAF\tPROOF")
	for _, ev := range evs {
		leaf := "-"
		if ev.LeafIndex != nil {
			leaf = fmt.Sprint(*ev.LeafIndex)
		}
		where := ev.Status
		if ev.File != "" {
			where = ev.File
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", ev.Version, ev.Type, leaf, where)
	}
	tw.Flush()
	if dir == "" && ps.Provable() > 0 {
		fmt.Fprintln(w, "(--out DIR writes the proofs there)")
	}
}
