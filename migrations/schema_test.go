package migrations_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/migrations"
)

var update = flag.Bool("update", false, "rewrite docs/schema.sql from a freshly migrated database")

const schemaFile = "../docs/schema.sql"

// TestSchemaDumpIsCurrent fails when docs/schema.sql is not what the
// migrations produce. `make schema` (go test -run SchemaDump -update)
// rewrites it.
func TestSchemaDumpIsCurrent(t *testing.T) {
	db := testdb.New(t)
	got := dumpSchema(t, db.URL)
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (run `make schema`)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/schema.sql is stale: run `make schema` and commit it\n%s", firstDifference(want, got))
	}
}

// TestMigrateIsIdempotent applies the migrations to an already migrated
// database and to a fresh one twice: nothing changes the second time.
func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for range 2 {
		r, err := migrations.Run(ctx, conn.Conn())
		if err != nil || r.Version != r.Latest || len(r.Applied) != 0 {
			t.Fatalf("migrate = %+v, %v; want the latest version and no definition applied", r, err)
		}
	}
}

// pgDump finds a pg_dump of the server's major version.
func pgDump(t *testing.T, url string) string {
	t.Helper()
	out, err := exec.Command("psql", url, "-Atc", "SHOW server_version_num").Output()
	if err != nil {
		t.Fatalf("psql: %v", err)
	}
	major := strings.TrimSpace(string(out))[:2]
	if p := filepath.Join("/usr/lib/postgresql", major, "bin", "pg_dump"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("pg_dump")
	if err != nil {
		t.Fatal("no pg_dump: install the PostgreSQL client (scripts/ensure-postgres.sh)")
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Lines that differ between otherwise identical dumps: versions and the
// random \restrict key newer pg_dump releases write.
var unstable = regexp.MustCompile(`(?m)^(-- Dumped (from|by) .*|\\(un)?restrict .*)\n`)

// The range partitions of ledger.events that migration 024 creates are
// named after, and bounded by, the transaction id it ran in: the same
// schema dumped from two databases differs there only.
var (
	partitionName  = regexp.MustCompile(`\bevents_[1-9][0-9]*`)
	partitionBound = regexp.MustCompile(`'[0-9]+'`)
	partitionLine  = regexp.MustCompile(`(?m)^.*FOR VALUES .*$`)
)

func stablePartitions(b []byte) []byte {
	b = partitionName.ReplaceAll(b, []byte("events_XID"))
	return partitionLine.ReplaceAllFunc(b, func(l []byte) []byte { return partitionBound.ReplaceAll(l, []byte("'XID'")) })
}

func dumpSchema(t *testing.T, url string) []byte {
	t.Helper()
	cmd := exec.Command(pgDump(t, url), "--schema-only", "--no-owner", "--no-tablespaces", "--dbname", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, stderr.String())
	}
	header := []byte("-- Execledger schema, as `make schema` dumps it from a freshly migrated database.\n-- Do not edit: change migrations/ and run `make schema`.\n\n")
	return append(header, stablePartitions(unstable.ReplaceAll(out, nil))...)
}

func firstDifference(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  committed: %s\n  migrated:  %s", i+1, wl, gl)
		}
	}
	return ""
}

// TestEveryLedgerRoleReadsTheSchemaVersion: a login holding any one ledger
// role can run the check every command runs after it connects
// (migrations.Inspect), so each gets the same "run execledger migrate"
// message rather than a permission error (022).
func TestEveryLedgerRoleReadsTheSchemaVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `SELECT rolname::text FROM pg_roles WHERE rolname LIKE 'ledger\_%' AND NOT rolcanlogin ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	roles, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(roles) < 8 {
		t.Fatalf("ledger roles %v (%v)", roles, err)
	}
	for i, r := range roles {
		login := db.LoginRole(t, fmt.Sprintf("p%d", i), r)
		st, err := migrations.Inspect(ctx, login.Pool)
		if err != nil || !st.UpToDate() {
			t.Errorf("a login holding only %s: %+v, %v", r, st, err)
		}
	}
}
