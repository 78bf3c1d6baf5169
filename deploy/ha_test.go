package deploy_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestHAExampleIsValid checks deploy/ha/docker-compose.yml, the Patroni
// example of docs/scaling.md, without a Docker engine: docker-compose
// accepts it, Patroni runs in synchronous strict mode (docs/replication.md:
// no acknowledged request lost), every execledger service that writes
// reaches the servers through a multi-host URL asking for the writable
// one, and the auditor's reads prefer a standby.
func TestHAExampleIsValid(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is not installed: `make test` installs it (scripts/ensure-test-deps.sh)")
	}
	cmd := exec.Command(bin, "-f", "deploy/ha/docker-compose.yml", "config")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	normalized, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, stderr.String())
	}
	var s stack
	if err := json.Unmarshal(yamlToJSON(t, normalized), &s); err != nil {
		t.Fatalf("decode: %v", err)
	}
	var patroni, writers int
	for name, svc := range s.Services {
		env := func(k string) string {
			if v := svc.Environment[k]; v != nil {
				return *v
			}
			return ""
		}
		if conf := env("SPILO_CONFIGURATION"); conf != "" {
			patroni++
			var c struct {
				Bootstrap struct {
					DCS struct {
						Sync   bool `yaml:"synchronous_mode"`
						Strict bool `yaml:"synchronous_mode_strict"`
					} `yaml:"dcs"`
				} `yaml:"bootstrap"`
			}
			if err := yaml.Unmarshal([]byte(conf), &c); err != nil || !c.Bootstrap.DCS.Sync || !c.Bootstrap.DCS.Strict {
				t.Errorf("%s: Patroni not in synchronous strict mode (%v): %s", name, err, conf)
			}
		}
		if u := env("DATABASE_URL"); u != "" {
			writers++
			checkMultiHost(t, name, u, "read-write")
		}
		if u := env("EXECLEDGER_DATABASE_REPLICA_URL"); u != "" {
			checkMultiHost(t, name, u, "prefer-standby")
		}
	}
	if patroni < 2 || writers < 2 {
		t.Errorf("%d Patroni servers and %d execledger services with a database URL; want at least two of each", patroni, writers)
	}
}

func checkMultiHost(t *testing.T, service, raw, attrs string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Errorf("%s: %v", service, err)
		return
	}
	if hosts := strings.Split(u.Host, ","); len(hosts) < 2 || u.Query().Get("target_session_attrs") != attrs {
		t.Errorf("%s: %s names %d hosts with target_session_attrs=%q; want every server and %s", service, raw, len(hosts), u.Query().Get("target_session_attrs"), attrs)
	}
}
