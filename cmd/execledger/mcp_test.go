package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// mcpEnv is a database with an executor (serve) running, and the logins
// of the MCP tests: agent (principal agent, a submitter), bob (principal
// bob, whom the MCP policy lets run echo only), carol (an approver).
type mcpEnv struct {
	db                    *testdb.DB
	agent, bob, carol     *testdb.Role
	dir                   string
	mcpPolicy, execPolicy string
	attestPub, logPub     string
	serveOut              *syncBuffer
}

// mcpPolicyText is what execledger mcp lists with.
const mcpPolicyText = `
permit (principal == Principal::"agent", action == Action::"tool.execute", resource)
when { resource == Tool::"echo" || resource == Tool::"sleep" };
permit (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");
`

// deniedEchoPolicy is an executor's policy published after a session
// listed its tools: it forbids agent's echo, which the session lists.
const deniedEchoPolicy = mcpPolicyText + `
forbid (principal == Principal::"agent", action == Action::"tool.execute", resource == Tool::"echo");
`

// newMCPEnv starts serve with execPolicy (the executor's Cedar text).
func newMCPEnv(t testing.TB, execPolicy string) *mcpEnv {
	t.Helper()
	db := testdb.New(t)
	e := &mcpEnv{db: db, dir: t.TempDir()}
	e.agent = db.LoginRole(t, "agent", "ledger_submitter")
	e.bob = db.LoginRole(t, "bob", "ledger_submitter")
	e.carol = db.LoginRole(t, "carol", "ledger_submitter", "ledger_approver")
	e.mcpPolicy = filepath.Join(e.dir, "mcp.cedar")
	e.execPolicy = filepath.Join(e.dir, "exec.cedar")
	for p, text := range map[string]string{e.mcpPolicy: mcpPolicyText, e.execPolicy: execPolicy} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := filepath.Join(e.dir, "attest.key")
	if _, err := attest.GenerateKeyFiles(key, key+".pub"); err != nil {
		t.Fatal(err)
	}
	e.attestPub = key + ".pub"
	logKey := filepath.Join(e.dir, "log.key")
	if r := execute(t, nil, "", "keygen", "--note", "--out", logKey); r.code != exitOK {
		t.Fatalf("keygen --note: %+v", r)
	}
	e.logPub = logKey + ".pub"
	environ := []string{"DATABASE_URL=" + db.URL, "EXECLEDGER_SERVE_LISTEN=", "EXECLEDGER_POLICY_FILES=" + e.execPolicy,
		"EXECLEDGER_ATTEST_KEY_FILE=" + key, "EXECLEDGER_SEALER_NOTE_KEY_FILE=" + logKey,
		"EXECLEDGER_EXECUTOR_SENSITIVE=sleep", "EXECLEDGER_EXECUTOR_TOOL_TIMEOUT=2s",
		"EXECLEDGER_EXECUTOR_DEFAULT_MAX_CALLS_PER_RUN=100000", "EXECLEDGER_SEALER_CHECKPOINT_INTERVAL=100ms",
		"EXECLEDGER_EXECUTOR_POLL_INTERVAL=20ms"}
	_, e.serveOut = startCommand(t, environ, "serve")
	return e
}

// mcpEnviron is the environment of execledger mcp acting as role (stdio),
// reading with the test database's superuser.
func (e *mcpEnv) mcpEnviron(role *testdb.Role, extra ...string) []string {
	return append([]string{"DATABASE_URL=" + role.URL, "EXECLEDGER_POLICY_FILES=" + e.mcpPolicy,
		"EXECLEDGER_MCP_READER_URL=" + e.db.URL, "EXECLEDGER_MCP_CALL_TIMEOUT=60s"}, extra...)
}

// stdioSession runs execledger mcp over pipes and connects the SDK's
// client to it.
func (e *mcpEnv) stdioSession(t testing.TB, role *testdb.Role, opts *mcp.ClientOptions) (*mcp.ClientSession, *syncBuffer, func() int) {
	t.Helper()
	return e.stdioSessionWith(t, role, opts)
}

// stdioSessionEnv is stdioSession with more environment.
func (e *mcpEnv) stdioSessionEnv(t testing.TB, role *testdb.Role, extra ...string) (*mcp.ClientSession, *syncBuffer, func() int) {
	t.Helper()
	return e.stdioSessionWith(t, role, nil, extra...)
}

func (e *mcpEnv) stdioSessionWith(t testing.TB, role *testdb.Role, opts *mcp.ClientOptions, extra ...string) (*mcp.ClientSession, *syncBuffer, func() int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := &syncBuffer{}
	done := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		code := run(ctx, []string{"mcp"}, &stdio{in: inR, out: outW, err: logs}, e.mcpEnviron(role, extra...))
		outW.Close()
		done <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v\n%s", err, logs.String())
	}
	var once sync.Once
	code := -1
	stop := func() int {
		once.Do(func() {
			cs.Close()
			inW.Close()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("mcp did not stop within 30s")
			}
			cancel()
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return cs, logs, stop
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// outcome decodes a call's structured content.
func mcpOutcome(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// approveWhenAwaiting approves the principal's first request of tool that
// awaits approval, as carol, and returns its id.
func (e *mcpEnv) approveWhenAwaiting(t *testing.T, tool string, since time.Time) uuid.UUID {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var id uuid.UUID
		err := e.db.Pool.QueryRow(context.Background(), `SELECT id FROM ledger.request_status
WHERE tool = $1 AND state = 'awaiting_approval' AND submitted_at >= $2 ORDER BY submitted_at LIMIT 1`, tool, since).Scan(&id)
		if err == nil {
			if _, err := e.carol.Pool.Exec(context.Background(), "SELECT ledger.approve($1, 'ok')", id); err != nil {
				t.Fatalf("approve: %v", err)
			}
			return id
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s request awaited approval within 60s\n%s", tool, e.serveOut.String())
	return uuid.Nil
}

// requestState reads a request's state as the superuser.
func (e *mcpEnv) requestState(t *testing.T, id uuid.UUID) ledger.State {
	t.Helper()
	var s ledger.State
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT state FROM ledger.request_status WHERE id = $1", id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *mcpEnv) countRequests(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.request_status").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMCPStdio drives execledger mcp over stdio with the SDK's client:
// list, a call that succeeds and is attested, readable and verifiable as
// resources, refusals before submit, and an unknown tool.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	cs, logs, stop := e.stdioSession(t, e.agent, nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"echo", "sleep"}) {
		t.Fatalf("tools/list = %v, want echo and sleep (process.run is off)", got)
	}
	ctx := context.Background()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over mcp"},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}})
	if err != nil {
		t.Fatalf("tools/call echo: %v\n%s", err, logs.String())
	}
	o := mcpOutcome(t, res)
	if res.IsError || o["state"] != "succeeded" || !strings.Contains(resultText(res), "over mcp") || o["attestation_digest"] == nil {
		t.Fatalf("echo: %+v %v %q", res, o, resultText(res))
	}
	id := uuid.MustParse(o["request_id"].(string))
	run := o["run_id"].(string)
	var principal, gotRun, channel string
	if err := e.db.Pool.QueryRow(ctx, `SELECT principal, run_id, coalesce(idempotency_key, '') FROM ledger.request_status WHERE id = $1`, id).
		Scan(&principal, &gotRun, &channel); err != nil || principal != "agent" || gotRun != run || !strings.HasPrefix(channel, "mcp/"+run+"/") {
		t.Fatalf("request row: %v %s %s key %q", err, principal, gotRun, channel)
	}

	var gotTrace *string
	if err := e.db.Pool.QueryRow(ctx, `SELECT metadata::jsonb ->> 'trace_id' FROM ledger.events WHERE stream = $1 AND type = 'tool.requested'`,
		"request:"+id.String()).Scan(&gotTrace); err != nil || gotTrace == nil || *gotTrace != traceID {
		t.Fatalf("the call's traceparent did not reach the request: %v %v", gotTrace, err)
	}

	// The attestation as a resource verifies offline.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "execledger://requests/" + id.String() + "/attestation"})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("read attestation: %v %+v", err, rr)
	}
	envFile := filepath.Join(e.dir, "attestation.json")
	if err := os.WriteFile(envFile, []byte(rr.Contents[0].Text), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := execute(t, nil, "", "verify", envFile, "--attest-key", e.attestPub); r.code != exitOK {
		t.Fatalf("verify the attestation: %+v", r)
	}
	// Another principal's request is not found.
	other := submitAs(t, e.bob, "echo", `{"text":"bob's"}`)
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "execledger://requests/" + other.String() + "/attestation"}); err == nil {
		t.Fatal("read another principal's attestation: no error")
	}
	// The session's bundle verifies offline, once the sealer has published
	// a checkpoint that holds the request (it may not have yet).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "execledger://runs/" + run + "/bundle"})
		if err == nil && len(rr.Contents) == 1 && strings.Contains(rr.Contents[0].Text, id.String()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read bundle: %v %+v\n%s", err, rr, logs.String())
		}
	}
	bundleFile := filepath.Join(e.dir, "run.bundle")
	if err := os.WriteFile(bundleFile, []byte(rr.Contents[0].Text), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := execute(t, nil, "", "verify", bundleFile, "--log-key", e.logPub, "--attest-key", e.attestPub); r.code != exitOK {
		t.Fatalf("verify the bundle: %+v", r)
	}

	// Remapped to another principal, the login no longer opens agent's run.
	remap := func(to string) {
		if _, err := e.db.Pool.Exec(ctx, "UPDATE ledger.principals SET principal = $1 WHERE login_role = $2", to, e.agent.Name); err != nil {
			t.Fatal(err)
		}
	}
	remap("someone-else")
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "execledger://runs/" + run + "/bundle"}); err == nil {
		t.Fatal("a login remapped to another principal read its old principal's run")
	}
	remap("agent")

	// Refused before anything is submitted: schema, size, unknown tool.
	before := e.countRequests(t)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"txt": "typo"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "input schema") {
		t.Fatalf("schema-invalid arguments: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strings.Repeat("x", 20<<10)}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "at most 16384") {
		t.Fatalf("oversized arguments: %v %+v", err, res)
	}
	if _, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "process.run", Arguments: map[string]any{"command": "ls"}}); err == nil ||
		!strings.Contains(err.Error(), "process.run") {
		t.Fatalf("unknown tool: %v", err)
	}
	if n := e.countRequests(t); n != before {
		t.Fatalf("refused calls submitted %d requests", n-before)
	}
	// The server still serves.
	if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}}); err != nil || res.IsError {
		t.Fatalf("echo after refusals: %v %+v", err, res)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("mcp exited %d\n%s", code, logs.String())
	}
}

func submitAs(t *testing.T, role *testdb.Role, tool, input string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	if err := role.Pool.QueryRow(context.Background(), "SELECT ledger.submit($1, $2::jsonb)", tool, input).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestMCPApprovalProgressCancelAndFailure: a sensitive call waits for its
// approval with progress notifications; a cancelled call is cancelled in
// the ledger; a call that fails and one the executor's policy denies are
// tool errors with their kinds.
func TestMCPApprovalProgressCancelAndFailure(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, deniedEchoPolicy)
	var mu sync.Mutex
	var progress []string
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params.Message)
		mu.Unlock()
	}}
	cs, logs, _ := e.stdioSession(t, e.agent, opts)
	ctx := context.Background()

	// Approval, with progress.
	since := time.Now().Add(-time.Second)
	type callResult struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan callResult, 1)
	go func() {
		// Long enough for several progress looks (every 200 ms) while it
		// runs, within the 2 s tool timeout: a 10 ms call can end between two.
		p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1500}}
		p.SetProgressToken("p1")
		res, err := cs.CallTool(ctx, p)
		done <- callResult{res, err}
	}()
	// Approve only once the progress has reported the wait: progress looks
	// every 200 ms, and an approval quicker than that leaves nothing to see.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		sofar := strings.Join(progress, "\n")
		mu.Unlock()
		if strings.Contains(sofar, "awaiting_approval:") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no awaiting_approval progress within 60s: %q", sofar)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.approveWhenAwaiting(t, "sleep", since)
	r := <-done
	if r.err != nil || r.res.IsError || mcpOutcome(t, r.res)["state"] != "succeeded" {
		t.Fatalf("approved sleep: %v %+v\n%s", r.err, r.res, logs.String())
	}
	mu.Lock()
	got := strings.Join(progress, "\n")
	mu.Unlock()
	for _, want := range []string{"pending", "awaiting_approval", "running"} {
		if !strings.Contains(got, want+":") {
			t.Errorf("progress %q lacks %s", got, want)
		}
	}

	// Failure: sleep beyond the executor's tool timeout.
	since = time.Now().Add(-time.Second)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 20000}})
		done <- callResult{res, err}
	}()
	e.approveWhenAwaiting(t, "sleep", since)
	r = <-done
	if r.err != nil || !r.res.IsError || mcpOutcome(t, r.res)["state"] != "failed" || mcpOutcome(t, r.res)["error_kind"] != "timed_out" ||
		!strings.Contains(resultText(r.res), "ran out of time") {
		t.Fatalf("failing sleep: %v %+v %q", r.err, r.res, resultText(r.res))
	}

	// Denial: the executor's policy forbids what the session listed.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "denied"}})
	if err != nil {
		t.Fatal(err)
	}
	if o := mcpOutcome(t, res); !res.IsError || o["state"] != "denied" || o["error_kind"] != "policy_denied" ||
		!strings.Contains(resultText(res), "policy does not allow") || o["attestation_digest"] == nil {
		t.Fatalf("denied echo: %v %q", o, resultText(res))
	}

	// Cancellation: the client cancels a call waiting for approval.
	since = time.Now()
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 10}})
		done <- callResult{res, err}
	}()
	id := waitForRequest(t, e, "sleep", "awaiting_approval", since)
	cancel()
	if r := <-done; r.err == nil {
		t.Fatalf("cancelled call returned %+v", r.res)
	}
	waitForState(t, e, id, ledger.StateCancelled)
}

func waitForRequest(t *testing.T, e *mcpEnv, tool string, state ledger.State, since time.Time) uuid.UUID {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var id uuid.UUID
		if e.db.Pool.QueryRow(context.Background(), `SELECT id FROM ledger.request_status WHERE tool = $1 AND state = $2 AND submitted_at >= $3
ORDER BY submitted_at DESC LIMIT 1`, tool, state, since).Scan(&id) == nil {
			return id
		}
	}
	t.Fatalf("no %s request %s within 60s", tool, state)
	return uuid.Nil
}

func waitForState(t *testing.T, e *mcpEnv, id uuid.UUID, want ledger.State) {
	t.Helper()
	var got ledger.State
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = e.requestState(t, id); got == want {
			return
		}
	}
	t.Fatalf("request %s is %s, want %s", id, got, want)
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// startMCPHTTP runs execledger mcp --listen and returns its URL.
func (e *mcpEnv) startMCPHTTP(t *testing.T) (string, *syncBuffer) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	u, err := testdb.WithUser(e.db.URL, "USERX")
	if err != nil {
		t.Fatal(err)
	}
	environ := []string{"DATABASE_URL=" + e.db.URL, "EXECLEDGER_POLICY_FILES=" + e.mcpPolicy, "EXECLEDGER_MCP_CALL_TIMEOUT=60s",
		"EXECLEDGER_MCP_LOGIN_URL=" + strings.Replace(u, "USERX", "{login}", 1)}
	_, out := startCommand(t, environ, "mcp", "--listen", addr)
	url := "http://" + addr + "/"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "mcp serving streamable HTTP"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("mcp --listen did not start:\n%s", out.String())
		}
	}
	return url, out
}

func httpSession(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := client.Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func createToken(t *testing.T, e *mcpEnv, login string) (token, id string) {
	t.Helper()
	r := execute(t, []string{"DATABASE_URL=" + e.db.URL}, "", "mcp", "token", "create", login, "--json", "--note", "test")
	var out struct{ ID, Token string }
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &out) != nil {
		t.Fatalf("token create: %+v", r)
	}
	return out.Token, out.ID
}

// TestMCPHTTPTokens: over streamable HTTP each token acts as its login;
// no token, a wrong one and a revoked one are refused and submit nothing.
func TestMCPHTTPTokens(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	url, logs := e.startMCPHTTP(t)
	agentToken, agentID := createToken(t, e, e.agent.Name)
	bobToken, _ := createToken(t, e, e.bob.Name)

	cs, err := httpSession(t, url, agentToken)
	if err != nil {
		t.Fatalf("connect with agent's token: %v\n%s", err, logs.String())
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"echo", "sleep"}) {
		t.Fatalf("agent's tools = %v", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "http"}})
	if err != nil || res.IsError {
		t.Fatalf("echo over HTTP: %v %+v\n%s", err, res, logs.String())
	}
	var principal string
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT principal FROM ledger.request_status WHERE id = $1",
		mcpOutcome(t, res)["request_id"]).Scan(&principal); err != nil || principal != "agent" {
		t.Fatalf("principal %q, %v", principal, err)
	}
	bobCS, err := httpSession(t, url, bobToken)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, bobCS); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("bob's tools = %v, want only echo (the policy forbids him sleep)", got)
	}

	before := e.countRequests(t)
	for name, token := range map[string]string{"none": "", "wrong": "elmcp_000000000000_nope", "garbage": "x"} {
		if _, err := httpSession(t, url, token); err == nil {
			t.Errorf("%s token: connected", name)
		}
		code, body := postJSON(t, url, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		if code != http.StatusUnauthorized || !strings.Contains(body, "token") {
			t.Errorf("%s token: %d %s", name, code, body)
		}
	}
	// Mapping a token to a privileged login is refused.
	exec := e.db.LoginRole(t, "svc", "ledger_executor")
	if r := execute(t, []string{"DATABASE_URL=" + e.db.URL}, "", "mcp", "token", "create", exec.Name); r.code != exitUsage ||
		!strings.Contains(r.stderr, "only as a submitter") {
		t.Fatalf("token for an executor login: %+v", r)
	}
	// Revoked: the open session's next call is refused too.
	if r := execute(t, []string{"DATABASE_URL=" + e.db.URL}, "", "mcp", "token", "revoke", agentID); r.code != exitOK {
		t.Fatalf("revoke: %+v", r)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after revoke"}}); err == nil {
		t.Fatal("call with a revoked token succeeded")
	}
	if _, err := httpSession(t, url, agentToken); err == nil {
		t.Fatal("connect with a revoked token succeeded")
	}
	if n := e.countRequests(t); n != before {
		t.Fatalf("refused tokens submitted %d requests", n-before)
	}
	r := execute(t, []string{"DATABASE_URL=" + e.db.URL}, "", "mcp", "token", "list")
	if r.code != exitOK || !strings.Contains(r.stdout, agentID) || strings.Contains(r.stdout, agentToken) {
		t.Fatalf("token list: %+v", r)
	}
	// bob's session still serves.
	if res, err := bobCS.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "bob"}}); err != nil || res.IsError {
		t.Fatalf("bob's echo: %v %+v", err, res)
	}
}

func postJSON(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rawStdio runs execledger mcp over pipes for a test that writes its own
// JSON-RPC lines.
func (e *mcpEnv) rawStdio(t *testing.T, role *testdb.Role) (send func(string), recv func() map[string]any, stop func() int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), []string{"mcp"}, &stdio{in: inR, out: outW, err: logs}, e.mcpEnviron(role))
		outW.Close()
		done <- code
	}()
	dec := json.NewDecoder(outR)
	lines := make(chan map[string]any, 16)
	go func() {
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				close(lines)
				return
			}
			lines <- m
		}
	}()
	send = func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatalf("write %q: %v\n%s", s, err, logs.String())
		}
	}
	recv = func() map[string]any {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("mcp closed its output\n%s", logs.String())
			}
			return m
		case <-time.After(60 * time.Second):
			t.Fatalf("no answer within 60s\n%s", logs.String())
		}
		return nil
	}
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			inW.Close()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("mcp did not stop within 30s")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return send, recv, stop
}

// TestMCPMalformedStdio: lines that are not JSON-RPC, too long, or of an
// unknown method each get a JSON-RPC error and the session reads on; a
// repeated request id is the same ledger request.
func TestMCPMalformedStdio(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	send, recv, stop := e.rawStdio(t, e.agent)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := recv(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	errorCode := func(m map[string]any) float64 {
		t.Helper()
		em, ok := m["error"].(map[string]any)
		if !ok {
			t.Fatalf("want an error, got %v", m)
		}
		return em["code"].(float64)
	}
	send(`{this is not json`)
	if c := errorCode(recv()); c != -32700 {
		t.Fatalf("garbage: code %v", c)
	}
	send(`{"hello":"world"}`)
	if c := errorCode(recv()); c != -32700 {
		t.Fatalf("not JSON-RPC: code %v", c)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 2<<20) + `"}}}`)
	if m := recv(); errorCode(m) != -32600 || !strings.Contains(m["error"].(map[string]any)["message"].(string), "over") {
		t.Fatalf("oversized line: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`)
	if c := errorCode(recv()); c != -32601 {
		t.Fatalf("unknown method: code %v", c)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no.such.tool","arguments":{}}}`)
	if m := recv(); m["error"] == nil && !strings.Contains(fmt.Sprint(m["result"]), "isError:true") {
		t.Fatalf("unknown tool: %v", m)
	}
	// The same request id twice: one ledger request.
	call := `{"jsonrpc":"2.0","id":"same","method":"tools/call","params":{"name":"echo","arguments":{"text":"once"}}}`
	ids := map[string]bool{}
	for range 2 {
		send(call)
		m := recv()
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc == nil || sc["state"] != "succeeded" {
			t.Fatalf("echo: %v", m)
		}
		ids[sc["request_id"].(string)] = true
	}
	if len(ids) != 1 {
		t.Fatalf("a repeated request id made %d requests", len(ids))
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	if m := recv(); m["result"] == nil {
		t.Fatalf("tools/list after the bad lines: %v", m)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("mcp exited %d", code)
	}
}

// rawHTTP is a hand-written streamable HTTP client: a session it opens,
// then requests it can drop without a notifications/cancelled.
type rawHTTP struct {
	t              *testing.T
	url, token, id string
}

func (c *rawHTTP) post(ctx context.Context, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
	}
	return http.DefaultClient.Do(req)
}

func (c *rawHTTP) initialize() {
	resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c.id = resp.Header.Get("Mcp-Session-Id"); c.id == "" || resp.StatusCode != 200 {
		c.t.Fatalf("initialize: %d, session %q", resp.StatusCode, c.id)
	}
	resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
}

// TestMCPHTTPMalformedAndDisconnect: a malformed body gets a clear error;
// a client that drops its connection mid-call leaves its request to run
// (not cancelled, not lost), and the server goes on serving.
func TestMCPHTTPMalformedAndDisconnect(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	url, _ := e.startMCPHTTP(t)
	token, _ := createToken(t, e, e.agent.Name)
	c := &rawHTTP{t: t, url: url, token: token}
	c.initialize()

	resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(strings.ToLower(string(body)), "json") {
		t.Fatalf("malformed body: %d %s", resp.StatusCode, body)
	}
	resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("x", 2<<20)+`"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", resp.StatusCode)
	}

	// Drop the connection while the call awaits approval.
	since := time.Now().Add(-time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	dropped := make(chan struct{})
	go func() {
		defer close(dropped)
		if resp, err := c.post(ctx, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":10}}}`); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	id := waitForRequest(t, e, "sleep", ledger.StateAwaitingApproval, since)
	cancel()
	<-dropped
	if _, err := e.carol.Pool.Exec(context.Background(), "SELECT ledger.approve($1, 'ok')", id); err != nil {
		t.Fatalf("approve after the disconnect: %v (state %s)", err, e.requestState(t, id))
	}
	waitForState(t, e, id, ledger.StateSucceeded)

	// Still serving: the same session, and a new one.
	resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "echo") {
		t.Fatalf("tools/list after the disconnect: %d %s", resp.StatusCode, body)
	}
	cs, err := httpSession(t, url, token)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}}); err != nil || res.IsError {
		t.Fatalf("echo after the disconnect: %v %+v", err, res)
	}
	// Another token cannot use this session.
	other, _ := createToken(t, e, e.bob.Name)
	c2 := &rawHTTP{t: t, url: url, token: other, id: c.id}
	resp, err = c2.post(context.Background(), `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another token on this session: %d", resp.StatusCode)
	}
}

// TestMCPStdioDisconnect: a client that goes away mid-call (stdin closed)
// ends the stdio server, and its request is not cancelled: it waits for
// its approval and runs.
func TestMCPStdioDisconnect(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	send, recv, stop := e.rawStdio(t, e.agent)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	since := time.Now().Add(-time.Second)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":10}}}`)
	id := waitForRequest(t, e, "sleep", ledger.StateAwaitingApproval, since)
	if code := stop(); code != exitOK {
		t.Fatalf("mcp exited %d after its client went away", code)
	}
	if s := e.requestState(t, id); s != ledger.StateAwaitingApproval {
		t.Fatalf("after the disconnect the request is %s", s)
	}
	if _, err := e.carol.Pool.Exec(context.Background(), "SELECT ledger.approve($1, 'ok')", id); err != nil {
		t.Fatal(err)
	}
	waitForState(t, e, id, ledger.StateSucceeded)
}

// TestMCPListsEnabledSkills: tools/list carries each enabled skill's tool
// with its manifest's description and input schema, not a skill that is
// not enabled nor one the policy forbids; a call runs it in tier A.
func TestMCPListsEnabledSkills(t *testing.T) {
	t.Parallel()
	b := newSkillBench(t)
	schema := func(dir string) {
		editManifest(t, dir, `input_schema = { type = "object" }`,
			`input_schema = { type = "object", required = ["x"], properties = { x = { type = "integer" } } }`)
	}
	hello := b.newSkill(t, "acme.hello", "wat", schema)
	idle := b.newSkill(t, "acme.idle", "wat", nil)
	banned := b.newSkill(t, "acme.banned", "wat", nil)
	b.run(t, b.alice, exitOK, "skill", "trust", "add", "acme", b.key+".pub")
	for _, art := range []string{hello, idle, banned} {
		b.run(t, b.alice, exitOK, "skill", "install", art)
	}
	b.run(t, b.alice, exitOK, "skill", "enable", "acme.hello")
	b.run(t, b.alice, exitOK, "skill", "enable", "acme.banned")
	_, out := startCommand(t, b.serve, "serve")

	pol := filepath.Join(b.dir, "mcp.cedar")
	text := `permit (principal == Principal::"ops", action in [Action::"tool.execute", Action::"skill.execute"], resource);
forbid (principal, action == Action::"skill.execute", resource == Skill::"acme.banned");`
	if err := os.WriteFile(pol, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &mcpEnv{db: b.db, mcpPolicy: pol}
	su := &testdb.Role{Name: "postgres", URL: b.db.URL, Pool: b.db.Pool}
	cs, logs, _ := e.stdioSessionEnv(t, su, "EXECLEDGER_WASM_ENABLED=true")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var helloTool *mcp.Tool
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Name == "acme.hello" {
			helloTool = tl
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"acme.hello", "echo", "sleep"}) {
		t.Fatalf("tools = %v, want acme.hello (enabled, permitted) and the built-ins\n%s", names, logs.String())
	}
	if sch, _ := json.Marshal(helloTool.InputSchema); helloTool.Description != "Echoes its input, a JSON object." ||
		!strings.Contains(string(sch), `"required":["x"]`) {
		t.Fatalf("acme.hello: %q %s", helloTool.Description, sch)
	}
	call, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "acme.hello", Arguments: map[string]any{"x": 7}})
	if err != nil || call.IsError || mcpOutcome(t, call)["tier"] != "A" || !strings.Contains(strings.ReplaceAll(resultText(call), " ", ""), `{"echo":{"x":7}}`) {
		t.Fatalf("acme.hello: %v %+v\n%s", err, call, out.String())
	}
	call, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "acme.hello", Arguments: map[string]any{"x": "seven"}})
	if err != nil || !call.IsError || !strings.Contains(resultText(call), "input schema") {
		t.Fatalf("acme.hello against its schema: %v %+v", err, call)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool trusting the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "execledger-mcp-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

// TestMCPHTTPTLS: with a certificate configured the server speaks HTTPS
// only, and a token works over it.
func TestMCPHTTPTLS(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	certFile, keyFile, roots := selfSigned(t, e.dir)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	u, err := testdb.WithUser(e.db.URL, "USERX")
	if err != nil {
		t.Fatal(err)
	}
	environ := []string{"DATABASE_URL=" + e.db.URL, "EXECLEDGER_POLICY_FILES=" + e.mcpPolicy,
		"EXECLEDGER_MCP_LOGIN_URL=" + strings.Replace(u, "USERX", "{login}", 1),
		"EXECLEDGER_MCP_TLS_CERT_FILE=" + certFile, "EXECLEDGER_MCP_TLS_KEY_FILE=" + keyFile}
	_, out := startCommand(t, environ, "mcp", "--listen", addr)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "https://"+addr); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("mcp --listen with TLS did not start:\n%s", out.String())
		}
	}
	token, _ := createToken(t, e, e.agent.Name)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	tlsTransport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "https://" + addr + "/",
		HTTPClient: &http.Client{Transport: bearer{token, tlsTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect over TLS: %v\n%s", err, out.String())
	}
	defer cs.Close()
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "tls"}}); err != nil || res.IsError {
		t.Fatalf("echo over TLS: %v %+v", err, res)
	}
	// Plain HTTP to the TLS port gets nothing it could mistake for MCP.
	if code, _ := postJSON(t, "http://"+addr+"/", token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code == http.StatusOK {
		t.Fatal("plain HTTP answered 200 on the TLS port")
	}
}

// TestMCPRefusesToStartBlind: without policy files mcp cannot know what
// the policy denies, and a submitter login alone cannot read the skill
// catalog or bindings: each is a clear error, not a partial catalog.
func TestMCPRefusesToStartBlind(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	agent := db.LoginRole(t, "agent", "ledger_submitter")
	pol := filepath.Join(t.TempDir(), "p.cedar")
	if err := os.WriteFile(pol, []byte(mcpPolicyText), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		environ []string
		want    string
	}{
		{[]string{"DATABASE_URL=" + agent.URL}, "policy.files"},
		{[]string{"DATABASE_URL=" + agent.URL, "EXECLEDGER_POLICY_FILES=" + pol}, "mcp.reader_url"},
		{[]string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_submitter").URL, "EXECLEDGER_POLICY_FILES=" + pol,
			"EXECLEDGER_MCP_READER_URL=" + db.URL}, "not mapped to a principal"},
		{[]string{"DATABASE_URL=" + agent.URL, "EXECLEDGER_POLICY_FILES=" + pol}, "mcp.reader_url"},
	} {
		r := execute(t, tc.environ, "", "mcp")
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %+v, want %q", tc.environ, r, tc.want)
		}
	}
	if r := execute(t, []string{"DATABASE_URL=" + agent.URL, "EXECLEDGER_POLICY_FILES=" + pol}, "", "mcp", "--listen", "0.0.0.0:1"); r.code != exitUsage ||
		!strings.Contains(r.stderr, "need TLS") {
		t.Errorf("--listen off loopback without TLS: %+v", r)
	}
}

// TestMCPApprovalWaitTimesOut: a call that needs approval waits up to
// mcp.call_timeout, then answers with the state it is in; the request
// goes on waiting in the ledger.
func TestMCPApprovalWaitTimesOut(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	cs, _, _ := e.stdioSessionEnv(t, e.agent, "EXECLEDGER_MCP_CALL_TIMEOUT=2s")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1}})
	if err != nil {
		t.Fatal(err)
	}
	o := mcpOutcome(t, res)
	if !res.IsError || o["state"] != "awaiting_approval" || !strings.Contains(resultText(res), "still awaiting_approval after 2s") {
		t.Fatalf("timed-out wait: %v %q", o, resultText(res))
	}
	id := uuid.MustParse(o["request_id"].(string))
	if s := e.requestState(t, id); s != ledger.StateAwaitingApproval {
		t.Fatalf("after the wait the request is %s", s)
	}
}
