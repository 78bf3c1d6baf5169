package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/execledger/execledger/internal/testdb"
)

// repoRoot is where docker-compose.yml and the Dockerfile are.
const repoRoot = ".."

// stack is the normalized output of `docker-compose config`.
type stack struct {
	Services map[string]service `json:"services"`
	Volumes  map[string]any     `json:"volumes"`
}

// service is one service of the normalized compose file. Entrypoint and
// command must be lists there (exec form), as every service's are.
type service struct {
	Image string `json:"image"`
	Build *struct {
		Context    string `json:"context"`
		Dockerfile string `json:"dockerfile"`
	} `json:"build"`
	Entrypoint  []string           `json:"entrypoint"`
	Command     []string           `json:"command"`
	Environment map[string]*string `json:"environment"`
	Volumes     []string           `json:"volumes"`
	Ports       []string           `json:"ports"`
	DependsOn   map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
}

// loadStack validates docker-compose.yml with `docker-compose config` and
// decodes its normalized form.
func loadStack(t *testing.T) stack {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is not installed: `make test` installs it (scripts/ensure-test-deps.sh)")
	}
	cmd := exec.Command(bin, "-f", "docker-compose.yml", "config")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	normalized, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, stderr.String())
	}
	var s stack
	if err := json.Unmarshal(yamlToJSON(t, normalized), &s); err != nil {
		t.Fatalf("docker-compose config: decode: %v", err)
	}
	return s
}

// yamlToJSON converts YAML (go.yaml.in/yaml/v3, the YAML project's own
// module, which Prometheus's client already brings) to JSON, so that the
// structs above need only json tags.
func yamlToJSON(t *testing.T, yamlText []byte) []byte {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(yamlText, &v); err != nil {
		t.Fatalf("YAML: %v", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("YAML to JSON: %v", err)
	}
	return out
}

// serveName is the service that runs `execledger serve`.
func (s stack) serveName(t *testing.T) string {
	t.Helper()
	var names []string
	for name, svc := range s.Services {
		argv := s.argv(t, svc)
		if len(argv) >= 2 && path.Base(argv[0]) == "execledger" && argv[1] == "serve" {
			names = append(names, name)
		}
	}
	if len(names) != 1 {
		t.Fatalf("docker-compose.yml: want one service running `execledger serve`, have %v", names)
	}
	return names[0]
}

// argv is what the container runs: its entrypoint (for a service built
// from the repository's Dockerfile, the Dockerfile's unless overridden),
// then its command.
func (s stack) argv(t *testing.T, svc service) []string {
	t.Helper()
	entry := svc.Entrypoint
	if entry == nil && svc.builtHere(t) {
		entry = dockerfileEntrypoint(t)
	}
	return append(slices.Clone(entry), svc.Command...)
}

// builtHere says whether the service's image is built from this repository.
func (svc service) builtHere(t *testing.T) bool {
	t.Helper()
	if svc.Build == nil {
		return false
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Clean(svc.Build.Context) != root || (svc.Build.Dockerfile != "" && svc.Build.Dockerfile != "Dockerfile") {
		t.Fatalf("a service builds from %s %s: the test knows only %s/Dockerfile", svc.Build.Context, svc.Build.Dockerfile, root)
	}
	return true
}

// dockerfileEntrypoint is the exec-form ENTRYPOINT of the Dockerfile's
// last stage.
func dockerfileEntrypoint(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var entry []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && strings.EqualFold(f[0], "FROM"):
			entry = nil
		case len(f) > 1 && strings.EqualFold(f[0], "ENTRYPOINT"):
			if err := json.Unmarshal([]byte(strings.TrimSpace(line[len(f[0]):])), &entry); err != nil {
				t.Fatalf("Dockerfile: ENTRYPOINT is not in exec form: %s", line)
			}
		}
	}
	if entry == nil {
		t.Fatal("Dockerfile: the last stage has no ENTRYPOINT")
	}
	return entry
}

// oneShots are the services that must complete before name starts
// (depends_on service_completed_successfully, transitively), in an order
// that runs each after those it depends on; waits lists its other
// dependencies (started, healthy).
func (s stack) oneShots(t *testing.T, name string) (order []string, waits map[string]string) {
	t.Helper()
	waits = map[string]string{}
	seen := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		svc, ok := s.Services[n]
		if !ok {
			t.Fatalf("docker-compose.yml: depends on unknown service %s", n)
		}
		deps := make([]string, 0, len(svc.DependsOn))
		for d := range svc.DependsOn {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, d := range deps {
			if svc.DependsOn[d].Condition != "service_completed_successfully" {
				waits[d] = svc.DependsOn[d].Condition
				continue
			}
			if !seen[d] {
				seen[d] = true
				visit(d)
				order = append(order, d)
			}
		}
	}
	visit(name)
	for d := range waits {
		if seen[d] {
			delete(waits, d)
		}
	}
	return order, waits
}

// publishedPort is the container port of the service's one published port.
func (svc service) publishedPort(t *testing.T, name string) int {
	t.Helper()
	if len(svc.Ports) != 1 {
		t.Fatalf("service %s: want one published port, have %v", name, svc.Ports)
	}
	spec, _, _ := strings.Cut(svc.Ports[0], "/")
	f := strings.Split(spec, ":")
	if len(f) != 3 || f[0] != "127.0.0.1" {
		t.Errorf("service %s publishes %s: publish on 127.0.0.1 only (host:container)", name, svc.Ports[0])
	}
	p, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatalf("service %s: port %q: %v", name, svc.Ports[0], err)
	}
	return p
}

// mount is one volume of a service.
type mount struct {
	source    string // a host path (bind mount) or a volume's name
	target    string // the container path
	readOnly  bool
	namedVols bool
}

func (svc service) mounts(t *testing.T, name string) []mount {
	t.Helper()
	var ms []mount
	for _, v := range svc.Volumes {
		f := strings.Split(v, ":")
		if len(f) < 2 || len(f) > 3 || !path.IsAbs(f[1]) {
			t.Fatalf("service %s: volume %q is not SOURCE:TARGET[:MODE]", name, v)
		}
		m := mount{source: f[0], target: path.Clean(f[1]), namedVols: !filepath.IsAbs(f[0])}
		if len(f) == 3 {
			m.readOnly = slices.Contains(strings.Split(f[2], ","), "ro")
		}
		ms = append(ms, m)
	}
	return ms
}

// filesystem stands in for the containers' mounts on this host: a named
// volume is one directory that every service mounting it shares, a bind
// mount a copy of its source under the service's own directory.
type filesystem struct {
	root string
}

// paths maps each container path the service mounts to its host stand-in,
// copying bind-mounted files there.
func (fsys filesystem) paths(t *testing.T, name string, svc service) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range svc.mounts(t, name) {
		if m.namedVols {
			host := filepath.Join(fsys.root, "volumes", m.source)
			if err := os.MkdirAll(host, 0o700); err != nil {
				t.Fatal(err)
			}
			out[m.target] = host
			continue
		}
		host := filepath.Join(fsys.root, "services", name, filepath.FromSlash(m.target))
		copyInto(t, m.source, host)
		out[m.target] = host
	}
	return out
}

// copyInto copies the file or directory src to dst; a missing src becomes
// an empty directory, as Docker makes one.
func copyInto(t *testing.T, src, dst string) {
	t.Helper()
	fi, err := os.Stat(src)
	switch {
	case os.IsNotExist(err):
		t.Logf("bind mount %s does not exist: Docker would mount an empty directory", src)
		err = os.MkdirAll(dst, 0o755)
	case err != nil:
	case fi.IsDir():
		if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
			err = os.CopyFS(dst, os.DirFS(src))
		}
	default:
		var b []byte
		if b, err = os.ReadFile(src); err == nil {
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = os.WriteFile(dst, b, fi.Mode().Perm())
			}
		}
	}
	if err != nil {
		t.Fatalf("bind mount %s: %v", src, err)
	}
}

// substitution rewrites the strings of a service's command and
// environment for this host. Only these differ from the compose file:
//   - each mounted container path becomes its host stand-in;
//   - each postgres:// URL of the compose database service becomes the
//     test database's URL with the same login (the test server trusts
//     local logins, so the password goes), so a service runs with exactly
//     the roles its login is given;
//   - a listen address on the published container port (0.0.0.0:P or :P)
//     becomes 127.0.0.1 on a free port.
type substitution struct {
	paths    map[string]string
	dbHost   string
	dbURL    string
	port     int // the container port to move, 0 for none
	freePort int
	moved    bool // the listen address was found
}

func (s *substitution) apply(v string) string {
	if s.port != 0 && (v == fmt.Sprintf("0.0.0.0:%d", s.port) || v == fmt.Sprintf(":%d", s.port)) {
		s.moved = true
		return fmt.Sprintf("127.0.0.1:%d", s.freePort)
	}
	url := regexp.MustCompile(`postgres(ql)?://([^\s"'@/:]*)(:[^\s"'@/]*)?@` + regexp.QuoteMeta(s.dbHost) + `(:[0-9]+)?/[^\s"']*`)
	v = url.ReplaceAllStringFunc(v, func(m string) string {
		login := url.FindStringSubmatch(m)[2]
		if login == "" {
			return s.dbURL
		}
		u, err := testdb.WithUser(s.dbURL, login)
		if err != nil {
			panic(err) // the test database's own URL: always parses
		}
		return u
	})
	return replacePaths(v, s.paths)
}

// replacePaths replaces, in one pass, every occurrence of a container path
// that starts and ends at a path boundary by its host path, longest first.
func replacePaths(v string, paths map[string]string) string {
	targets := make([]string, 0, len(paths))
	for c := range paths {
		targets = append(targets, c)
	}
	sort.Slice(targets, func(i, j int) bool { return len(targets[i]) > len(targets[j]) })
	var b strings.Builder
	for i := 0; i < len(v); {
		if i == 0 || !isPathByte(v[i-1]) {
			if c := matchAt(v, i, targets); c != "" {
				b.WriteString(paths[c])
				i += len(c)
				continue
			}
		}
		b.WriteByte(v[i])
		i++
	}
	return b.String()
}

func matchAt(v string, i int, targets []string) string {
	for _, c := range targets {
		if strings.HasPrefix(v[i:], c) {
			if end := i + len(c); end == len(v) || v[end] == '/' || !isPathByte(v[end]) {
				return c
			}
		}
	}
	return ""
}

func isPathByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// command is the service's process on this host: argv and environment
// substituted, the program found on binDir first and then this host's
// PATH, nothing of the test's own environment but PATH and HOME.
func (s stack) command(t *testing.T, name string, sub *substitution, binDir, workDir string) *exec.Cmd {
	t.Helper()
	svc := s.Services[name]
	argv := s.argv(t, svc)
	if len(argv) == 0 {
		t.Fatalf("service %s: no entrypoint or command", name)
	}
	for i := range argv {
		argv[i] = sub.apply(argv[i])
	}
	search := binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	env := []string{"PATH=" + search, "HOME=" + workDir}
	keys := make([]string, 0, len(svc.Environment))
	for k := range svc.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := svc.Environment[k]; v != nil {
			env = append(env, k+"="+sub.apply(*v))
		}
	}
	prog := argv[0]
	if !strings.Contains(prog, "/") {
		prog = lookPath(t, prog, search)
	}
	cmd := exec.Command(prog, argv[1:]...)
	cmd.Env, cmd.Dir = env, workDir
	return cmd
}

func lookPath(t *testing.T, prog, search string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(search) {
		p := filepath.Join(dir, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s: not found on this host (PATH %s)", prog, search)
	return ""
}

// freePort is a TCP port of 127.0.0.1 nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
