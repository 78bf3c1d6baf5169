package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

// archiveFlags are archive's flags.
type archiveFlags struct {
	keys           verifyKeyFlags
	partition, out string
	list, force    bool
}

func newArchiveCmd(e *env) *cobra.Command {
	var f archiveFlags
	cmd := &cobra.Command{
		Use:   "archive --out FILE --log-key K --attest-key K [--partition NAME] | archive --list",
		Short: "Export a closed partition of the log as a verified bundle, then detach it from the database",
		Long: `Archive takes a closed partition of ledger.events (the oldest by default), writes the bundle of
its leaves proved against the newest published checkpoint (docs/bundle.md, scope "leaves"),
verifies that file with the offline verifier and the keys given, records the archive in
ledger.event_archives (its leaves, the checkpoint, the bundle's SHA-256 and the compact range of
its leaves, which verify --db checks against the tree from then on) and only then detaches the
partition. It needs a ledger_admin login.

A partition is closed when no running transaction can still write into it, the sealer and every
projection have read past its last event, and all its events are sealed. Archive refuses, and
changes nothing, when it is not (exit 3), and when the bundle does not verify.

The detached partition is a table of its own (ledger.events_N), outside the log: keep it, or drop
it once the bundle is stored where your records are kept. --list shows the partitions, whether
each can be archived now, and the archives made.`,
		Example: `  execledger archive --list
  execledger archive --out events-0.bundle --log-key log.key.pub --attest-key attest.key.pub
  execledger verify events-0.bundle --log-key log.key.pub --attest-key attest.key.pub`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.list {
				return runArchiveList(cmd.Context(), e)
			}
			return runArchive(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.list, "list", false, "list the partitions of the log and the archives made")
	fl.StringVar(&f.partition, "partition", "", "the partition `NAME` to archive (default: the oldest)")
	fl.StringVar(&f.out, "out", "", "the bundle `FILE` to write")
	fl.BoolVar(&f.force, "force", false, "overwrite FILE if it exists")
	fl.StringVar(&f.keys.log, "log-key", "", "the log's verifier `KEY` the bundle is verified with")
	fl.StringArrayVar(&f.keys.attest, "attest-key", nil, "an attestation public key `FILE` (PEM); repeat across key rotations")
	fl.StringArrayVar(&f.keys.witness, "witness-key", nil, "a witness's verifier `KEY` whose cosignature the checkpoint must carry; repeatable")
	e.configFlag(cmd)
	return cmd
}

// runArchive archives one partition: plan, bundle, verify, record, detach.
func runArchive(ctx context.Context, e *env, f archiveFlags) error {
	if f.out == "" || f.keys.log == "" || len(f.keys.attest) == 0 {
		return fail(exitUsage, "archive needs --out FILE, --log-key and --attest-key (or --list)")
	}
	if _, err := os.Lstat(f.out); err == nil && !f.force {
		return fail(exitError, "archive: %s exists (--force overwrites it)", f.out)
	}
	keys, err := f.keys.load()
	if err != nil {
		return fail(exitError, "archive: %v", err)
	}
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	name := f.partition
	if name == "" {
		if name, err = oldestPartition(ctx, pool); err != nil {
			return fail(exitError, "%v", err)
		}
	}
	plan, err := export.PlanArchive(ctx, pool, name)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == contract.SQLStateInsufficientPriv {
		return fail(exitError, "%v", err)
	}
	if err != nil { // not closed, or no such partition: the reason is the error's
		return fail(exitNotOK, "%v", err)
	}
	w := e.io.out
	if plan.Events == 0 {
		a, err := export.Detach(ctx, pool, plan, 0, nil, "")
		if err != nil {
			return fail(exitNotOK, "%v", err)
		}
		fmt.Fprintf(w, "partition %s holds no event: detached with nothing to export (archive %d)\n", a.Partition, a.ID)
		printDetached(w, a.Partition)
		return nil
	}
	var sum export.Summary
	n, err := writeFileAtomic(f.out, f.force, func(out io.Writer) error {
		sum, err = export.ArchiveBundle(ctx, pool, plan, time.Now(), bundle.NewWriter(out))
		return err
	})
	if err != nil {
		return fail(exitError, "%v", err)
	}
	digest, hashes, err := verifyArchive(ctx, f.out, keys, plan)
	if err != nil {
		return fail(exitNotOK, "archive: %s: %v; the partition stays in the log", f.out, err)
	}
	a, err := export.Detach(ctx, pool, plan, sum.Choice.Checkpoint.Size, hashes, digest)
	if err != nil {
		return fail(exitNotOK, "%v; the bundle %s is written, the partition stays in the log", err, f.out)
	}
	fmt.Fprintf(w, "archived %s: %d events, leaves %d to %d, positions %d to %d (archive %d)\n",
		a.Partition, a.Events, plan.FirstLeaf, plan.LastLeaf, plan.FirstPosition, plan.LastPosition, a.ID)
	fmt.Fprintf(w, "checkpoint:  %s (origin %s)\n", checkpointText(sum.Choice.Checkpoint), sum.Choice.Checkpoint.Origin)
	fmt.Fprintf(w, "out:         %s (%d bytes, sha256 %s), verified\n", f.out, n, digest)
	printDetached(w, a.Partition)
	return nil
}

func printDetached(w io.Writer, partition string) {
	fmt.Fprintf(w, "detached:    ledger.%s is now a table of its own, outside the log; keep it, or drop it once the bundle is stored: DROP TABLE ledger.%s\n",
		partition, partition)
}

// verifyArchive verifies the archive bundle at path with keys, checks it
// holds exactly plan's leaves, and returns its SHA-256 and the compact
// range of its leaves.
func verifyArchive(ctx context.Context, path string, keys bundle.Keys, plan export.ArchivePlan) (string, [][]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer file.Close()
	h := sha256.New()
	rep, err := bundle.Verify(ctx, io.TeeReader(file, h), keys, nil)
	if err != nil {
		return "", nil, err
	}
	if !rep.OK {
		return "", nil, fmt.Errorf("the bundle does not verify: %s", rep.Fault)
	}
	span := plan.Leaves()
	if rep.Scope == nil || rep.Scope.Leaves == nil || *rep.Scope.Leaves != span || rep.Events != plan.Events {
		return "", nil, fmt.Errorf("the bundle holds %d events, not the %d of leaves [%d, %d)", rep.Events, plan.Events, span.Begin, span.End)
	}
	if _, err := io.Copy(h, file); err != nil {
		return "", nil, err
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return "", nil, err
	}
	hashes, err := export.RangeHashes(file, span)
	if err != nil {
		return "", nil, err
	}
	return hex.EncodeToString(h.Sum(nil)), hashes, nil
}

// oldestPartition names the oldest range partition of the log.
func oldestPartition(ctx context.Context, db ledger.DBTX) (string, error) {
	ps, err := export.Partitions(ctx, db, false)
	if err != nil {
		return "", err
	}
	for _, p := range ps {
		if !p.Default {
			return p.Name, nil
		}
	}
	return "", fmt.Errorf("archive: ledger.events has no range partition")
}

// runArchiveList prints the partitions and the archives.
func runArchiveList(ctx context.Context, e *env) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	ps, err := export.Partitions(ctx, pool, true)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	as, err := export.Archives(ctx, pool)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tTRANSACTIONS\tFIRST POSITION\tLAST POSITION\tARCHIVABLE")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, txRange(p), intOrDash(p.FirstPos), intOrDash(p.LastPos), archivable(p))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(as) == 0 {
		fmt.Fprintln(e.io.out, "no archive yet")
		return nil
	}
	fmt.Fprintln(e.io.out)
	tw = tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ARCHIVE\tPARTITION\tEVENTS\tLEAVES\tCHECKPOINT\tBUNDLE SHA256\tARCHIVED")
	for _, a := range as {
		leaves, cp, sha := "-", "-", "-"
		if a.Events > 0 {
			leaves, cp, sha = fmt.Sprintf("%d-%d", *a.FirstLeaf, *a.LastLeaf), fmt.Sprint(*a.CheckpointSize), *a.BundleSHA256
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s by %s\n", a.ID, a.Partition, a.Events, leaves, cp, sha,
			a.ArchivedAt.UTC().Format(time.RFC3339), a.ArchivedBy)
	}
	return tw.Flush()
}

func txRange(p export.Partition) string {
	if p.Default {
		return "default"
	}
	from := "0"
	if p.From != nil {
		from = *p.From
	}
	return from + "-" + *p.To
}

func intOrDash(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

func archivable(p export.Partition) string {
	if p.Archivable == "" {
		return "yes"
	}
	return "no: " + p.Archivable
}
