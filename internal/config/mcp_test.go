package config

import (
	"strings"
	"testing"
)

func TestMCPValidation(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string // "" = valid
	}{
		{nil, ""},
		{[]string{"EXECLEDGER_MCP_LISTEN=127.0.0.1:8765", "EXECLEDGER_MCP_LOGIN_URL=postgres://{login}@db/ledger"}, ""},
		{[]string{"EXECLEDGER_MCP_LISTEN=0.0.0.0:8765", "EXECLEDGER_MCP_LOGIN_URL=postgres://{login}@db/ledger"}, "need TLS"},
		{[]string{"EXECLEDGER_MCP_LISTEN=0.0.0.0:8765", "EXECLEDGER_MCP_LOGIN_URL=postgres://{login}@db/ledger",
			"EXECLEDGER_MCP_TLS_CERT_FILE=c.pem", "EXECLEDGER_MCP_TLS_KEY_FILE=k.pem"}, ""},
		{[]string{"EXECLEDGER_MCP_TLS_CERT_FILE=c.pem"}, "set both or neither"},
		{[]string{"EXECLEDGER_MCP_LISTEN=127.0.0.1:8765"}, "mcp.login_url: required"},
		{[]string{"EXECLEDGER_MCP_LISTEN=127.0.0.1:8765", "EXECLEDGER_MCP_LOGIN_URL=postgres://agent@db/ledger"}, "must be {login}"},
		{[]string{"EXECLEDGER_MCP_LISTEN=127.0.0.1:8765", "EXECLEDGER_MCP_LOGIN_URL=postgres://{login}@db/{login}"}, "must be {login}"},
		{[]string{"EXECLEDGER_MCP_LISTEN=127.0.0.1:8765", "EXECLEDGER_MCP_LOGIN_URL=postgres://{login}:pw@db/ledger"}, "holds a password"},
		{[]string{"EXECLEDGER_MCP_CALL_TIMEOUT=0s"}, "mcp.call_timeout"},
		{[]string{"EXECLEDGER_MCP_READER_URL=http://x"}, "mcp.reader_url"},
	} {
		_, err := Load("", tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
}

func TestMCPLoginURLFor(t *testing.T) {
	m := MCP{LoginURL: "postgres://{login}@db:5432/ledger?sslmode=verify-full"}
	if got := m.LoginURLFor("agent@x/y"); got != "postgres://agent%40x%2Fy@db:5432/ledger?sslmode=verify-full" {
		t.Fatalf("LoginURLFor = %s", got)
	}
}
