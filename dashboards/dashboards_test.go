// Package dashboards_test checks the deployment files: docker-compose.yml
// is valid, every Grafana dashboard parses, and every metric a dashboard
// queries is one that `execledger serve` really exports.
package dashboards_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/opsserver"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

func TestComposeFileIsValid(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is not installed: `make test` installs it (scripts/ensure-test-deps.sh)")
	}
	cmd := exec.Command(bin, "-f", "../docker-compose.yml", "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	// Every file the compose file mounts exists.
	compose, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`- \./([^:]+):`).FindAllStringSubmatch(string(compose), -1) {
		if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
			t.Errorf("docker-compose.yml mounts %s: %v", m[1], err)
		}
	}
}

// runOneRequest runs an executor that reports to ops until one allowed
// and one denied request are final, so every executor metric has values.
func runOneRequest(t *testing.T, db *testdb.DB, ops *opsserver.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := db.MapPrincipal(ctx, "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.FromSources([]policy.Source{{Name: "ops.cedar",
		Text: []byte(`permit (principal == Principal::"ops", action == Action::"tool.execute", resource == Tool::"echo");`)}})
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	x, err := executor.New(db.Pool, executor.Config{Label: "dash", Metrics: executor.NewMetrics(ops.Registry())}, pol,
		attest.NewSigner(priv), slog.New(slog.DiscardHandler), executor.Echo{}, executor.Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	client := ledger.NewClient(db.Pool)
	defer client.Close()
	for _, tool := range []string{"echo", "sleep"} {
		id, err := client.Submit(ctx, ledger.SubmitParams{Tool: tool, Input: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		waitCtx, stop := context.WithTimeout(ctx, 30*time.Second)
		_, err = client.Await(waitCtx, id)
		stop()
		if err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var metricName = regexp.MustCompile(`\bexecledger_[a-z0-9_]+`)

func TestDashboardsQueryExportedMetrics(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ops := opsserver.New(db.Pool, slog.New(slog.DiscardHandler), opsserver.Config{})
	runOneRequest(t, db, ops)
	srv := httptest.NewServer(ops.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	exported := map[string]bool{}
	for _, name := range metricName.FindAllString(string(body), -1) {
		exported[name] = true
	}

	files, err := filepath.Glob("grafana/dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards found (%v)", err)
	}
	uids := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("%s: needs a uid, a title and panels", f)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", f, other, d.UID)
		}
		uids[d.UID] = f
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, name := range metricName.FindAllString(tg.Expr, -1) {
					if !exported[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] {
						t.Errorf("%s, panel %q: %s is not exported by execledger serve", f, p.Title, name)
					}
				}
			}
		}
	}
}
