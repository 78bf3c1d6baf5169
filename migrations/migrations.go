// Package migrations holds the numbered SQL migrations of the ledger schema,
// embedded in the binary, and applies them with jackc/tern.
//
// Tern is made for pgx, runs each migration in its own transaction, records
// the applied version in a table and serializes concurrent migrators with an
// advisory lock, which is all this schema needs.
package migrations

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// VersionTable is where tern records the applied schema version.
const VersionTable = "public.execledger_schema_version"

// Migrate brings the database behind conn up to the newest migration and
// returns the version it ended at. It is safe to run concurrently against
// the same database.
func Migrate(ctx context.Context, conn *pgx.Conn) (int32, error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return 0, err
	}
	if err := m.Migrate(ctx); err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	v, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: read version: %w", err)
	}
	return v, nil
}

// Latest is the number of the newest embedded migration.
func Latest(ctx context.Context, conn *pgx.Conn) (int32, error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return 0, err
	}
	return int32(len(m.Migrations)), nil
}

// Current is the version the database behind conn is at (0 when unmigrated).
func Current(ctx context.Context, conn *pgx.Conn) (int32, error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return 0, err
	}
	v, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: read version: %w", err)
	}
	return v, nil
}

// Files is the embedded migration set, for tools that fingerprint it.
func Files() embed.FS { return files }

func newMigrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return nil, fmt.Errorf("migrations: load: %w", err)
	}
	return m, nil
}
