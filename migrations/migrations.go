// Package migrations owns the ledger schema: the numbered migrations
// (tables, columns, constraints, indexes, data moves, the removal of a
// definition) and one definition file per function, view, row-security
// policy set and trigger (api/, events/, executor/, log/, projections/,
// skills/, views/, policies/), all embedded in the binary.
//
// Migrate first applies the pending numbered migrations with jackc/tern
// (each in its own transaction, the version in VersionTable), then, in one
// transaction, every definition whose text changed since it was recorded in
// DefinitionTable or that was recorded at an older schema version, in the
// order the files' `-- depends:` lines declare. Both steps run under tern's
// advisory lock, so concurrent migrators serialize. docs/migrations.md says
// how to change a rule.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// The role folders of the definition files. A new folder is added here;
// TestEveryDefinitionFolderIsEmbedded fails until it is.
//
//go:embed api events executor log policies projections skills views
var definitionFiles embed.FS

// VersionTable is where tern records the applied schema version.
const VersionTable = "public.execledger_schema_version"

// DefinitionTable records each applied definition file: its SHA-256 and
// the schema version it was applied at (migration 019 creates it).
const DefinitionTable = "public.execledger_definitions"

// ternLock is the advisory lock tern takes around each of its steps
// (migrate.lockNum, unexported). Migrate holds it for the whole run; an
// advisory lock is re-entrant within a session, so tern's own take nests.
const ternLock = int64(9628173550095224)

// Result is what one Migrate run did.
type Result struct {
	Version int32    // the schema version the database is at
	Latest  int32    // the newest embedded migration
	Applied []string // the definition files applied, in order
}

// Status is how far the database is behind this binary.
type Status struct {
	Version int32 // the schema version the database is at (0 when unmigrated)
	Latest  int32 // the newest embedded migration
	// Pending are the definition files Migrate would apply, in order.
	Pending []string
	// Retired are definitions recorded as applied that this binary no
	// longer ships; Migrate forgets them (a numbered migration drops them).
	Retired []string
}

// UpToDate reports whether Migrate has nothing to do.
func (s Status) UpToDate() bool {
	return s.Version == s.Latest && len(s.Pending) == 0 && len(s.Retired) == 0
}

// Migrate brings the database behind conn up to the newest migration and
// its definitions, and returns the version it ended at. It is safe to run
// concurrently against the same database.
func Migrate(ctx context.Context, conn *pgx.Conn) (int32, error) {
	r, err := Run(ctx, conn)
	return r.Version, err
}

// Run is Migrate, saying which definitions it applied.
func Run(ctx context.Context, conn *pgx.Conn) (Result, error) {
	return run(ctx, conn, files, definitionFiles)
}

func run(ctx context.Context, conn *pgx.Conn, numbered, definitions fs.FS) (res Result, err error) {
	defs, err := loadDefinitions(definitions)
	if err != nil {
		return res, err
	}
	m, err := newMigrator(ctx, conn, numbered)
	if err != nil {
		return res, err
	}
	res.Latest = int32(len(m.Migrations))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", ternLock); err != nil {
		return res, fmt.Errorf("migrations: lock: %w", err)
	}
	defer func() {
		_, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", ternLock)
		if err == nil && uerr != nil {
			err = fmt.Errorf("migrations: unlock: %w", uerr)
		}
	}()
	if err := m.Migrate(ctx); err != nil {
		return res, fmt.Errorf("migrations: %w", err)
	}
	if res.Version, err = m.GetCurrentVersion(ctx); err != nil {
		return res, fmt.Errorf("migrations: read version: %w", err)
	}
	res.Applied, err = applyDefinitions(ctx, conn, defs, res.Version)
	return res, err
}

// applyDefinitions runs, in one transaction, each definition not recorded
// with its digest at version, records it, and forgets retired ones.
func applyDefinitions(ctx context.Context, conn *pgx.Conn, defs []Definition, version int32) ([]string, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: definitions: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	recorded, err := readRecorded(ctx, tx)
	if err != nil {
		return nil, err
	}
	if recorded == nil {
		return nil, fmt.Errorf("migrations: %s is missing at schema version %d", DefinitionTable, version)
	}
	pending, retired := compare(defs, recorded, version)
	for _, d := range defs {
		if !slices.Contains(pending, d.Name) {
			continue
		}
		if _, err := tx.Exec(ctx, d.SQL); err != nil {
			return nil, fmt.Errorf("migrations: definition %s: %w", d.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+DefinitionTable+` (name, sha256, schema_version) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET sha256 = excluded.sha256, schema_version = excluded.schema_version, applied_at = now()`,
			d.Name, d.SHA256, version); err != nil {
			return nil, fmt.Errorf("migrations: record %s: %w", d.Name, err)
		}
	}
	if len(retired) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM `+DefinitionTable+` WHERE name = ANY($1)`, retired); err != nil {
			return nil, fmt.Errorf("migrations: forget retired definitions: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("migrations: definitions: %w", err)
	}
	return pending, nil
}

type record struct {
	sha256  string
	version int32
}

// readRecorded returns the recorded definitions, or nil when the table
// does not exist yet (a database before migration 019).
func readRecorded(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}) (map[string]record, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, DefinitionTable).Scan(&exists); err != nil {
		return nil, fmt.Errorf("migrations: look up %s: %w", DefinitionTable, err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT name, sha256, schema_version FROM `+DefinitionTable)
	if err != nil {
		return nil, fmt.Errorf("migrations: read %s: %w", DefinitionTable, err)
	}
	out := map[string]record{}
	var name string
	var r record
	_, err = pgx.ForEachRow(rows, []any{&name, &r.sha256, &r.version}, func() error {
		out[name] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrations: read %s: %w", DefinitionTable, err)
	}
	return out, nil
}

// compare returns the definitions to apply (in defs' order) and the
// recorded names no longer shipped. A definition is pending when its text
// changed, or when it was applied at another schema version: a numbered
// migration may have dropped or changed what it stands on, so every
// definition is applied again after one runs.
func compare(defs []Definition, recorded map[string]record, version int32) (pending, retired []string) {
	shipped := map[string]bool{}
	for _, d := range defs {
		shipped[d.Name] = true
		if r, ok := recorded[d.Name]; !ok || r.sha256 != d.SHA256 || r.version != version {
			pending = append(pending, d.Name)
		}
	}
	for n := range recorded {
		if !shipped[n] {
			retired = append(retired, n)
		}
	}
	sort.Strings(retired)
	return pending, retired
}

// ReadStatus compares the database behind conn with this binary's
// migrations and definitions; it changes nothing but tern's version table,
// which it creates when missing.
func ReadStatus(ctx context.Context, conn *pgx.Conn) (Status, error) {
	return readStatus(ctx, conn, files, definitionFiles)
}

func readStatus(ctx context.Context, conn *pgx.Conn, numbered, definitions fs.FS) (Status, error) {
	var s Status
	defs, err := loadDefinitions(definitions)
	if err != nil {
		return s, err
	}
	m, err := newMigrator(ctx, conn, numbered)
	if err != nil {
		return s, err
	}
	s.Latest = int32(len(m.Migrations))
	if s.Version, err = m.GetCurrentVersion(ctx); err != nil {
		return s, fmt.Errorf("migrations: read version: %w", err)
	}
	recorded, err := readRecorded(ctx, conn)
	if err != nil {
		return s, err
	}
	// Definitions are applied at the newest version: below it, every one
	// is pending.
	s.Pending, s.Retired = compare(defs, recorded, s.Latest)
	return s, nil
}

// Files is the embedded numbered migration set (tern's input).
func Files() embed.FS { return files }

// Definitions are the embedded definition files in the order Migrate
// applies them.
func Definitions() ([]Definition, error) { return loadDefinitions(definitionFiles) }

// Digest fingerprints the numbered migrations and the definition files
// together, for caches of migrated databases (internal/testdb's template).
func Digest() (string, error) {
	h := sha256.New()
	for _, fsys := range []fs.FS{files, definitionFiles} {
		var names []string
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, p)
			}
			return err
		})
		if err != nil {
			return "", err
		}
		sort.Strings(names)
		for _, n := range names {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func newMigrator(ctx context.Context, conn *pgx.Conn, numbered fs.FS) (*migrate.Migrator, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	if err := m.LoadMigrations(numbered); err != nil {
		return nil, fmt.Errorf("migrations: load: %w", err)
	}
	return m, nil
}
