package testdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Role is a login role made for one test.
type Role struct {
	Name string
	URL  string // connects to the test's database as this role
	Pool *pgxpool.Pool
}

// LoginRole creates a login role for t, maps it to principal in db (none
// when principal is ""), grants it the given group roles (ledger_submitter,
// …) and opens a pool as it. The role is dropped when t ends.
func (db *DB) LoginRole(t testing.TB, principal string, grants ...string) *Role {
	t.Helper()
	ctx := context.Background()
	name := "el_test_" + randomHex(6)
	if _, err := db.Pool.Exec(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN"); err != nil {
		t.Fatalf("testdb: create role: %v", err)
	}
	t.Cleanup(func() {
		if _, err := db.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Errorf("testdb: drop role %s: %v", name, err)
		}
	})
	for _, g := range grants {
		if _, err := db.Pool.Exec(ctx, "GRANT "+pgx.Identifier{g}.Sanitize()+" TO "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatalf("testdb: grant %s: %v", g, err)
		}
	}
	if principal != "" {
		if _, err := db.Pool.Exec(ctx, "INSERT INTO ledger.principals (login_role, principal) VALUES ($1, $2)", name, principal); err != nil {
			t.Fatalf("testdb: map principal: %v", err)
		}
	}
	u, err := WithUser(db.URL, name)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatalf("testdb: connect as %s: %v", name, err)
	}
	t.Cleanup(pool.Close)
	return &Role{Name: name, URL: u, Pool: pool}
}

// MapPrincipal maps an existing login role to principal in db.
func (db *DB) MapPrincipal(ctx context.Context, loginRole, principal string) error {
	_, err := db.Pool.Exec(ctx, "INSERT INTO ledger.principals (login_role, principal) VALUES ($1, $2)", loginRole, principal)
	if err != nil {
		return fmt.Errorf("testdb: map %s: %w", loginRole, err)
	}
	return nil
}
