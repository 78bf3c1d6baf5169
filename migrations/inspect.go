package migrations

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// Querier is what Inspect reads through: a pool, a connection or a
// transaction.
type Querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Inspect is ReadStatus for every other component: it writes nothing and
// takes no lock, so that a login of any ledger role (each may read
// VersionTable and DefinitionTable) and a read-only replica can run it. A
// database without VersionTable is at version 0; a Version above Latest
// is one a newer binary migrated.
func Inspect(ctx context.Context, q Querier) (Status, error) {
	return inspect(ctx, q, files, definitionFiles)
}

func inspect(ctx context.Context, q Querier, numbered, definitions fs.FS) (Status, error) {
	var s Status
	defs, err := loadDefinitions(definitions)
	if err != nil {
		return s, err
	}
	// A migrator without a connection only loads the files.
	m, err := migrate.NewMigrator(ctx, nil, VersionTable)
	if err != nil {
		return s, fmt.Errorf("migrations: %w", err)
	}
	if err := m.LoadMigrations(numbered); err != nil {
		return s, fmt.Errorf("migrations: load: %w", err)
	}
	s.Latest = int32(len(m.Migrations))
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, VersionTable).Scan(&exists); err != nil {
		return s, fmt.Errorf("migrations: look up %s: %w", VersionTable, err)
	}
	if !exists {
		return s, nil
	}
	err = q.QueryRow(ctx, `SELECT version FROM `+VersionTable).Scan(&s.Version)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return s, fmt.Errorf("migrations: read version: %w", err)
	}
	if s.Version != s.Latest {
		return s, nil // the definitions are compared at the same version only
	}
	recorded, err := readRecorded(ctx, q)
	if err != nil {
		return s, err
	}
	s.Pending, s.Retired = compare(defs, recorded, s.Latest)
	return s, nil
}
