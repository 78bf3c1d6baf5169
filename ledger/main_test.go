package ledger

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/execledger/execledger/internal/testdb"
)

// TestMain gives the runnable examples a database of their own in
// DATABASE_URL, where the login role is mapped to principal
// "example-service", and checks that no test leaks a goroutine.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctx := context.Background()
	db, err := testdb.Create(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "examples database:", err)
		return 1
	}
	defer db.Drop(ctx)
	if err := db.MapPrincipal(ctx, "postgres", "example-service"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("DATABASE_URL", db.URL)
	code := m.Run()
	db.Pool.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			return 1
		}
	}
	return code
}
