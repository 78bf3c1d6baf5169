package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// nodeResult is what testdata/mcp-node/client.mjs prints.
type nodeResult struct {
	Tools []string `json:"tools"`
	Echo  struct {
		IsError    bool           `json:"isError"`
		Text       string         `json:"text"`
		Structured map[string]any `json:"structured"`
	} `json:"echo"`
	Progress    []string `json:"progress"`
	Attestation string   `json:"attestation"`
	SchemaError struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"schemaError"`
	UnknownTool string `json:"unknownTool"`
}

// runNodeClient runs the npm client with env and decodes what it saw.
// Node and the SDK are test dependencies (scripts/ensure-test-deps.sh):
// missing, the test fails rather than skips.
func runNodeClient(t *testing.T, env map[string]string) nodeResult {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run scripts/ensure-test-deps.sh")
	}
	dir, err := filepath.Abs("../../testdata/mcp-node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatal("the MCP TypeScript SDK is not installed in testdata/mcp-node: run scripts/ensure-test-deps.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var r nodeResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("node client printed %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	return r
}

func checkNodeResult(t *testing.T, e *mcpEnv, how string, r nodeResult) {
	t.Helper()
	if !slices.Equal(r.Tools, []string{"echo", "sleep"}) {
		t.Errorf("%s: tools %v", how, r.Tools)
	}
	if r.Echo.IsError || !strings.Contains(r.Echo.Text, "from node") || r.Echo.Structured["state"] != "succeeded" ||
		r.Echo.Structured["attestation_digest"] == nil {
		t.Errorf("%s: echo %+v", how, r.Echo)
	}
	if len(r.Progress) == 0 || !strings.HasPrefix(r.Progress[0], "pending:") {
		t.Errorf("%s: progress %q", how, r.Progress)
	}
	if !r.SchemaError.IsError || !strings.Contains(r.SchemaError.Text, "input schema") {
		t.Errorf("%s: schema error %+v", how, r.SchemaError)
	}
	if !strings.Contains(r.UnknownTool, "no.such.tool") {
		t.Errorf("%s: unknown tool %q", how, r.UnknownTool)
	}
	envFile := filepath.Join(t.TempDir(), "attestation.json")
	if err := os.WriteFile(envFile, []byte(r.Attestation), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := execute(t, nil, "", "verify", envFile, "--attest-key", e.attestPub); res.code != exitOK {
		t.Errorf("%s: verify the attestation: %+v", how, res)
	}
}

// TestMCPNodeClient drives execledger mcp with the TypeScript SDK's
// client from npm, over stdio (node spawns this test binary as execledger
// mcp) and over streamable HTTP with a bearer token.
func TestMCPNodeClient(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, mcpPolicyText)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serverEnv := map[string]string{"RUN_AS_EXECLEDGER": "1"}
	for _, kv := range e.mcpEnviron(e.agent) {
		k, v, _ := strings.Cut(kv, "=")
		serverEnv[k] = v
	}
	envJSON, _ := json.Marshal(serverEnv)
	checkNodeResult(t, e, "stdio", runNodeClient(t, map[string]string{"MCP_MODE": "stdio", "MCP_COMMAND": self,
		"MCP_ARGS": `["mcp"]`, "MCP_ENV": string(envJSON)}))

	url, _ := e.startMCPHTTP(t)
	token, _ := createToken(t, e, e.agent.Name)
	checkNodeResult(t, e, "http", runNodeClient(t, map[string]string{"MCP_MODE": "http", "MCP_URL": url, "MCP_TOKEN": token}))
}
