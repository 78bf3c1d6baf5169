// Package dashboards_test checks the deployment files: docker-compose.yml
// is valid, every Grafana dashboard parses, and every metric a dashboard
// queries is one that `execledger serve` really exports.
package dashboards_test

import (
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

	"github.com/execledger/execledger/internal/opsserver"
	"github.com/execledger/execledger/internal/testdb"
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
	srv := httptest.NewServer(opsserver.New(db.Pool, slog.New(slog.DiscardHandler)).Handler())
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
