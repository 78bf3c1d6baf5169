package export

import (
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/bundle"
)

func TestRunScope(t *testing.T) {
	if err := validScope(bundle.Scope{Run: "r1"}); err == nil || !strings.Contains(err.Error(), "needs its principal") {
		t.Fatalf("a run without a principal: %v", err)
	}
	if err := validScope(bundle.Scope{Request: "x", Principal: "p", Run: "r1"}); err == nil {
		t.Fatal("a request scope with a run: no error")
	}
	if err := validScope(bundle.Scope{Principal: "p", Run: "r1"}); err != nil {
		t.Fatalf("a principal's run: %v", err)
	}
	where, args := selectionWhere(bundle.Scope{Principal: "p", Run: "r1"})
	if where != "WHERE r.principal = $2 AND r.run_id = $3" || len(args) != 2 || args[1] != "r1" {
		t.Fatalf("selectionWhere = %q %v", where, args)
	}
}
