//go:build unix

// The tests start a private PostgreSQL server (internal/pgcluster), which
// runs on Unix systems only.

package console_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/pgcluster"
)

// TestMain runs the package's tests against a private PostgreSQL server
// that checks passwords (scram-sha-256) for every login but the
// superuser: the console's sign-in is real authentication, which the
// shared test server (trust) could not show. internal/testdb builds its
// template and the tests' databases there, through TEST_DATABASE_URL.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base, err := os.MkdirTemp("/var/tmp", "execledger-console-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(base)
	// The server runs as an unprivileged user, who must reach its data
	// directory.
	if err := os.Chmod(base, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: base + "/pgdata"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "console tests:", err)
		return 1
	}
	defer cluster.Stop(context.Background())
	if err := requirePasswords(ctx, cluster); err != nil {
		fmt.Fprintln(os.Stderr, "console tests:", err)
		return 1
	}
	os.Setenv("TEST_DATABASE_URL", cluster.URL("postgres"))
	code := m.Run()
	closeBrowser()
	return code
}

// hba trusts the superuser (the tests' administration) and the members of
// console_trusted (a server that checks no password, which the console
// must refuse), and asks every other login for its password.
const hba = `local all postgres trust
host all postgres 127.0.0.1/32 trust
host all +console_trusted 127.0.0.1/32 trust
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
`

func requirePasswords(ctx context.Context, c *pgcluster.Cluster) error {
	if err := os.WriteFile(c.DataDir()+"/pg_hba.conf", []byte(hba), 0o600); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE ROLE console_trusted NOLOGIN"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	// pg_reload_conf signals the postmaster; wait until a new connection
	// is asked for a password.
	probe := strings.Replace(c.URL("postgres"), "postgres@", "console_probe@", 1)
	deadline := time.Now().Add(time.Minute)
	for {
		pc, err := pgx.Connect(ctx, probe)
		if err == nil {
			pc.Close(ctx)
		}
		if err != nil && strings.Contains(err.Error(), "password") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pg_hba.conf not in force after a reload: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
