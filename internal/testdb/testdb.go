// Package testdb gives each test its own freshly migrated PostgreSQL database.
//
// The server is TEST_DATABASE_URL when set (its database is used only to
// create others), else postgres://postgres@127.0.0.1:5432/postgres. The
// first test of a process migrates a template database named after a digest
// of the migrations and the definition files, once per cluster; every test then clones it, which
// takes milliseconds, and drops its clone when it ends. Tests that use it
// can run in parallel. A server that cannot be reached fails the test: it
// is never skipped.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/migrations"
)

// DB is one test's database.
type DB struct {
	Name string
	URL  string // connects as the server's superuser
	Pool *pgxpool.Pool

	forged bool // ForgesEvents: no contract check at the end
}

// ForgesEvents says the test writes events no writer of the ledger would
// (a tamper test's forgeries), so the end-of-test check of every event
// against the contract is not made.
func (db *DB) ForgesEvents() { db.forged = true }

var template struct {
	once sync.Once
	name string
	err  error
}

// AdminURL is the URL of the server tests create their databases on.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// New creates a database for t from the migrated template and drops it when t ends.
func New(t testing.TB) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := Create(ctx)
	if err != nil {
		t.Fatalf("testdb: %v (server %s; `make test` starts PostgreSQL)", err, AdminURL())
	}
	t.Cleanup(func() {
		if !db.forged && !t.Failed() {
			if err := db.CheckEvents(context.Background()); err != nil {
				t.Errorf("testdb: %v", err)
			}
		}
		if err := db.Drop(context.Background()); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	return db
}

// CheckEvents checks every event in the database against the contract
// (contract.CheckEvent): each of its types on the streams the contract
// gives it, with its payload members. New runs it when a test ends, so
// every test that makes a writer write is also a test of the writer's
// agreement with the contract.
func (db *DB) CheckEvents(ctx context.Context) error {
	rows, err := db.Pool.Query(ctx, `
SELECT DISTINCT ON (type, split_part(stream, ':', 1), keys) type, stream, keys
FROM (SELECT type, stream,
             CASE WHEN json_typeof(payload) = 'object' THEN ARRAY(SELECT json_object_keys(payload)) END AS keys
      FROM ledger.events
      -- a payload holding \u0000 is legal json that no function can read
      WHERE strpos(payload::text, '\u0000') = 0) e`)
	if err != nil {
		return fmt.Errorf("check events: %w", err)
	}
	var errs []error
	for rows.Next() {
		var typ, stream string
		var keys []string
		if err := rows.Scan(&typ, &stream, &keys); err != nil {
			return fmt.Errorf("check events: %w", err)
		}
		if err := contract.CheckEvent(typ, stream, keys); err != nil {
			errs = append(errs, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check events: %w", err)
	}
	return errors.Join(errs...)
}

// Create makes a database from the migrated template; the caller drops it.
// Tests use New; Create is for TestMain and examples.
func Create(ctx context.Context) (*DB, error) {
	tpl, err := templateName(ctx)
	if err != nil {
		return nil, err
	}
	name := "execledger_test_" + randomHex(8)
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tpl}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database from %s: %w", tpl, err)
	}
	u, err := WithDatabase(AdminURL(), name)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	return &DB{Name: name, URL: u, Pool: pool}, nil
}

// Drop closes the pool and drops the database, ending any session still on it.
func (db *DB) Drop(ctx context.Context) error {
	db.Pool.Close()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return fmt.Errorf("drop %s: %w", db.Name, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop %s: %w", db.Name, err)
	}
	return nil
}

// WithDatabase returns rawURL pointing at database name.
func WithDatabase(rawURL, name string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// WithUser returns rawURL connecting as user, with no password.
func WithUser(rawURL, user string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	u.User = url.User(user)
	return u.String(), nil
}

func templateName(ctx context.Context) (string, error) {
	template.once.Do(func() {
		template.name, template.err = ensureTemplate(ctx)
	})
	return template.name, template.err
}

// ensureTemplate builds the template under a temporary name and renames it
// only when fully migrated, under an advisory lock, so that concurrent test
// processes build it once and never clone a half-migrated one.
func ensureTemplate(ctx context.Context) (string, error) {
	digest, err := migrationsDigest()
	if err != nil {
		return "", err
	}
	name := "execledger_tpl_" + digest
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(hashtext('execledger.testdb.template'))"); err != nil {
		return "", fmt.Errorf("lock template: %w", err)
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext('execledger.testdb.template'))")

	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	for _, stmt := range []string{
		"DROP DATABASE IF EXISTS " + pgx.Identifier{building}.Sanitize() + " WITH (FORCE)",
		"CREATE DATABASE " + pgx.Identifier{building}.Sanitize(),
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			return "", fmt.Errorf("build template: %w", err)
		}
	}
	u, err := WithDatabase(AdminURL(), building)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return "", fmt.Errorf("connect to template: %w", err)
	}
	_, err = migrations.Migrate(ctx, conn)
	conn.Close(ctx)
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("publish template: %w", err)
	}
	return name, nil
}

// migrationsDigest names the template after the migrations' and the
// definition files' content, so a changed file gets a new template and a
// stale one is never cloned.
func migrationsDigest() (string, error) {
	d, err := migrations.Digest()
	if err != nil {
		return "", err
	}
	return d[:16], nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// EmptyURL creates a database with nothing in it (no migration), dropped
// when t ends, and returns its URL as the server's superuser: for tests of
// what meets an unmigrated or half-migrated database.
func EmptyURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := "execledger_test_" + randomHex(8)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	u, err := WithDatabase(AdminURL(), name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
