package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

// TestArchiveCommand: archive refuses a partition that is not closed and
// an auditor; an admin's archive of a closed partition writes a bundle
// that verifies offline, detaches the partition, and verify --db still
// passes, checking the archived leaves against the tree.
func TestArchiveCommand(t *testing.T) {
	t.Parallel()
	x := startTransparency(t)
	ctx := context.Background()
	if _, err := x.db.Pool.Exec(ctx, `DO $$
DECLARE p text;
BEGIN
    FOR p IN SELECT name FROM ledger.event_partitions() WHERE from_tx_id IS NOT NULL AND last_position IS NULL LOOP
        EXECUTE format('DROP TABLE ledger.%I', p);
    END LOOP;
END $$;
UPDATE ledger.event_partitioning SET width = 40, ahead = 100;
SELECT ledger.events_partition_ahead();`); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		id := x.submit(t, x.alice, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": strings.Repeat("a", i)}})
		awaitFinal(t, x.alice, id)
	}
	x.awaitSealed(t)
	admin := []string{"DATABASE_URL=" + x.db.LoginRole(t, "", "ledger_admin").URL}
	dir := t.TempDir()
	out := filepath.Join(dir, "archive.bundle")
	keys := []string{"--log-key", x.logPub, "--attest-key", x.attestPub}

	r := execute(t, admin, "", "archive", "--list")
	if r.code != exitOK || !strings.Contains(r.stdout, "PARTITION") || !strings.Contains(r.stdout, "events_default") ||
		!strings.Contains(r.stdout, "no: ") || !strings.Contains(r.stdout, "no archive yet") {
		t.Fatalf("archive --list: %+v", r)
	}
	ps, err := export.Partitions(ctx, x.db.Pool, false)
	if err != nil {
		t.Fatal(err)
	}
	oldest := ""
	for _, p := range ps {
		if p.FirstPos != nil && !p.Default {
			oldest = p.Name
			break
		}
	}
	// The range of a running transaction is not closed.
	open, err := x.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Rollback(ctx) }()
	var running string
	if err := open.QueryRow(ctx, `SELECT name FROM ledger.event_partitions()
WHERE pg_current_xact_id() >= from_tx_id AND pg_current_xact_id() < to_tx_id`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	r = execute(t, admin, "", append([]string{"archive", "--partition", running, "--out", out}, keys...)...)
	_ = open.Rollback(ctx)
	if r.code != exitNotOK || !strings.Contains(r.stderr, "is not closed") {
		t.Fatalf("archive of %s, the range of a running transaction: %+v", running, r)
	}
	r = execute(t, x.auditor, "", append([]string{"archive", "--partition", oldest, "--out", out}, keys...)...)
	if r.code != exitError || !strings.Contains(r.stderr, "permission denied") || !strings.Contains(r.stderr, "needs ledger_admin") {
		t.Fatalf("an auditor's archive: %+v", r)
	}
	// Once every projection has read past it, the oldest partition with
	// events is archived.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r = execute(t, admin, "", append([]string{"archive", "--partition", oldest, "--out", out, "--force"}, keys...)...)
		if r.code == exitOK || time.Now().After(deadline) {
			break
		}
	}
	if r.code != exitOK || !strings.Contains(r.stdout, "archived "+oldest) || !strings.Contains(r.stdout, "verified") ||
		!strings.Contains(r.stdout, "DROP TABLE ledger."+oldest) {
		t.Fatalf("archive of %s: %+v", oldest, r)
	}
	t.Logf("archive:\n%s", r.stdout)
	rep := verifyJSON(t, append([]string{"verify", out, "--json"}, keys...), exitOK)
	if !rep.OK || rep.Scope == nil || rep.Scope.Leaves == nil || rep.Events == 0 {
		t.Fatalf("verify of the archive bundle: %+v", rep)
	}
	r = execute(t, x.auditor, "", append([]string{"verify", "--db"}, keys...)...)
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(r.stdout, "archived: ") {
		t.Fatalf("verify --db after the archive: %+v", r)
	}
	r = execute(t, admin, "", "archive", "--list")
	if r.code != exitOK || !strings.Contains(r.stdout, "ARCHIVE") || strings.Contains(r.stdout, "\n"+oldest+" ") {
		t.Fatalf("archive --list after the archive: %+v", r)
	}
}
