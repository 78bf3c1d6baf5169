package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Database is one run's fresh, empty database.
type Database struct {
	Name     string
	adminURL string
}

// createDatabase creates execledger_bench_<random> on the server of adminURL.
func createDatabase(ctx context.Context, adminURL string) (*Database, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	db := &Database{Name: "execledger_bench_" + hex.EncodeToString(b), adminURL: adminURL}
	if err := db.admin(ctx, "CREATE DATABASE "+pgx.Identifier{db.Name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("bench: create database: %w", err)
	}
	return db, nil
}

// drop drops the database, ending any session still connected to it.
func (db *Database) drop(ctx context.Context) error {
	if err := db.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("bench: drop database %s: %w", db.Name, err)
	}
	return nil
}

func (db *Database) admin(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, db.adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

// connect opens a single connection to the database.
func (db *Database) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(db.adminURL)
	if err != nil {
		return nil, err
	}
	cfg.Database = db.Name
	return pgx.ConnectConfig(ctx, cfg)
}

// pool opens a pool of at most maxConns connections to the database, each
// with the given settings.
func (db *Database) pool(ctx context.Context, maxConns int, settings map[string]string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(db.adminURL)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.Database = db.Name
	cfg.MaxConns = int32(maxConns)
	maps.Copy(cfg.ConnConfig.RuntimeParams, settings)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: open %s: %w", db.Name, err)
	}
	return pool, nil
}
