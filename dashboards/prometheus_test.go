package dashboards_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prometheus is a real Prometheus server the test started, on a free
// port, with its own configuration and data directory.
type prometheus struct {
	url string
	out *syncBuffer
}

// lookPrometheus finds a program of the Prometheus distribution. Missing
// is a failure, not a skip: `make test` installs it.
func lookPrometheus(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: `make test` installs it (scripts/ensure-test-deps.sh, Debian package prometheus): %v", name, err)
	}
	return p
}

// startPrometheus runs Prometheus scraping target (host:port) and
// evaluating the rules of ruleFiles every second until the test ends.
func startPrometheus(t *testing.T, target string, ruleFiles ...string) *prometheus {
	t.Helper()
	bin := lookPrometheus(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	body := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: %s
scrape_configs:
  - job_name: execledger
    static_configs:
      - targets: [%q]
`, yamlList(t, ruleFiles), target)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := &prometheus{url: "http://" + addr, out: &syncBuffer{}}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Env = baseEnv()
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	waitHTTP(t, p.url+"/-/ready", exited, p.out)
	return p
}

// yamlList is files, made absolute, as a YAML flow sequence.
func yamlList(t *testing.T, files []string) string {
	t.Helper()
	quoted := make([]string, len(files))
	for i, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		quoted[i] = strconv.Quote(abs)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// promResponse is the envelope of Prometheus's HTTP API.
type promResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// query evaluates expr at the current time and returns the number of
// series or samples in its result.
func (p *prometheus) query(expr string) (int, error) {
	status, body, err := fetch(p.url + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	var r promResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("%d %s: %w", status, body, err)
	}
	if r.Status != "success" {
		err := fmt.Errorf("%s: %s", r.ErrorType, r.Error)
		if r.ErrorType == "bad_data" {
			err = fmt.Errorf("%w: %w", errQuery, err)
		}
		return 0, err
	}
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		return 0, err
	}
	if data.ResultType == "scalar" || data.ResultType == "string" {
		return 1, nil
	}
	return len(data.Result), nil
}

// labelValues is what Grafana's label_values(metric, label) lists.
func (p *prometheus) labelValues(t *testing.T, metric, label string) []string {
	t.Helper()
	var r promResponse
	u := p.url + "/api/v1/label/" + url.PathEscape(label) + "/values?match[]=" + url.QueryEscape(metric)
	if err := json.Unmarshal(get(t, u), &r); err != nil || r.Status != "success" {
		t.Fatalf("label values of %s: %v %s", label, err, r.Error)
	}
	var values []string
	if err := json.Unmarshal(r.Data, &values); err != nil {
		t.Fatal(err)
	}
	return values
}

// rule is an alerting rule as Prometheus loaded it.
type rule struct {
	Name        string            `json:"name"`
	Query       string            `json:"query"`
	Duration    float64           `json:"duration"` // for:, in seconds
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Health      string            `json:"health"`
	LastError   string            `json:"lastError"`
	Type        string            `json:"type"`
}

// rules lists the alerting rules Prometheus has loaded.
func (p *prometheus) rules(t *testing.T) []rule {
	t.Helper()
	var r promResponse
	if err := json.Unmarshal(get(t, p.url+"/api/v1/rules?type=alert"), &r); err != nil || r.Status != "success" {
		t.Fatalf("rules: %v %s", err, r.Error)
	}
	var data struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out
}
