package wasmrun

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// storageSuite is what every Storage must do: read back what put, the
// way the store is written, wrote.
func storageSuite(t *testing.T, s Storage, put func(key string, value []byte) error) {
	t.Helper()
	ctx := context.Background()
	if v, ok, err := s.Get(ctx, "acme/missing"); ok || err != nil || v != nil {
		t.Errorf("get of a missing key = %q, %v, %v", v, ok, err)
	}
	for _, value := range [][]byte{[]byte("v1"), []byte("v2\x00bin"), {}, bytes.Repeat([]byte("x"), MaxStorageValue)} {
		if err := put("acme/k", value); err != nil {
			t.Fatalf("put %d bytes: %v", len(value), err)
		}
		v, ok, err := s.Get(ctx, "acme/k")
		if !ok || err != nil || !bytes.Equal(v, value) {
			t.Fatalf("get after putting %d bytes = %d bytes, %v, %v", len(value), len(v), ok, err)
		}
	}
	key := "acme/" + strings.Repeat("é", (MaxStorageKey-5)/2)
	if err := put(key, []byte("long")); err != nil {
		t.Fatalf("put of a %d-byte key: %v", len(key), err)
	}
	if v, ok, err := s.Get(ctx, "other/k"); ok || err != nil {
		t.Errorf("another prefix's key = %q, %v, %v", v, ok, err)
	}
}

func TestMemoryStorage(t *testing.T) {
	t.Parallel()
	s := &MemoryStorage{}
	storageSuite(t, s, func(key string, value []byte) error { return s.Put(context.Background(), key, value) })
}

// pgPut writes key's value as the executor does, in a statement of its
// own.
func pgPut(db ledger.DBTX) func(key string, value []byte) error {
	return func(key string, value []byte) error {
		_, err := db.Exec(context.Background(), `INSERT INTO ledger.skill_storage (key, value) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = clock_timestamp()`, key, value)
		return err
	}
}

func TestPGStorage(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	executor := db.LoginRole(t, "", "ledger_executor")
	storageSuite(t, PGStorage{Pool: executor.Pool}, pgPut(executor.Pool))

	var n int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.skill_storage").Scan(&n); err != nil || n != 2 {
		t.Errorf("ledger.skill_storage has %d rows (%v), want 2", n, err)
	}
}

// TestPGStoragePrivileges checks that only executors write
// ledger.skill_storage, auditors read it and other roles see nothing.
func TestPGStoragePrivileges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if err := pgPut(db.LoginRole(t, "", "ledger_executor").Pool)("acme/k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	auditor := PGStorage{Pool: db.LoginRole(t, "", "ledger_auditor").Pool}
	if v, ok, err := auditor.Get(ctx, "acme/k"); !ok || err != nil || string(v) != "v" {
		t.Errorf("auditor's get = %q, %v, %v", v, ok, err)
	}
	for name, s := range map[string]PGStorage{
		"auditor":   auditor,
		"submitter": {Pool: db.LoginRole(t, "p", "ledger_submitter").Pool},
	} {
		if err := pgPut(s.Pool)("acme/k", []byte("w")); !insufficientPrivilege(err) {
			t.Errorf("%s's put: %v, want insufficient_privilege", name, err)
		}
	}
	if _, _, err := (PGStorage{Pool: db.LoginRole(t, "").Pool}).Get(ctx, "acme/k"); !insufficientPrivilege(err) {
		t.Errorf("an ungranted role's get: %v, want insufficient_privilege", err)
	}
}

func insufficientPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// TestPGStorageThroughAHost runs caps_storage's put and get in separate
// calls against Postgres: the put reaches the table only when its writes
// are committed, as the executor does with the call's outcome.
func TestPGStorageThroughAHost(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	c := Capabilities{StoragePrefixes: []string{"acme/"}}
	wasm := wat(t, "caps_storage")
	pool := db.LoginRole(t, "", "ledger_executor").Pool
	cfg := Config{Policy: c, Storage: PGStorage{Pool: pool}}
	for _, e := range []string{"put", "get"} {
		m := module(t, tool(e), wasm)
		m.Entrypoint, m.Capabilities = e, c
		cfg.Modules = append(cfg.Modules, m)
	}
	h := host(t, cfg)
	wantOutput(t, run(t, h, tool("get"), `{}`), `{"result": -2}`)
	res := run(t, h, tool("put"), `{}`)
	wantOutput(t, res, `{"result": 0}`)
	wantOutput(t, run(t, h, tool("get"), `{}`), `{"result": -2}`)
	for _, w := range res.StorageWrites {
		if err := pgPut(pool)(w.Key, w.Value); err != nil {
			t.Fatal(err)
		}
	}
	wantOutput(t, run(t, h, tool("get"), `{}`), `{"result": 2}`)
	var v []byte
	if err := db.Pool.QueryRow(context.Background(), "SELECT value FROM ledger.skill_storage WHERE key = 'acme/k'").Scan(&v); err != nil || string(v) != "v1" {
		t.Errorf("ledger.skill_storage acme/k = %q, %v", v, err)
	}
}
