package mcpserver

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestStampPutsTheRequestIDInMeta(t *testing.T) {
	for _, tc := range []struct {
		in, wantID string // wantID "" = unchanged
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, `7`},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","_meta":{"io.execledger/jsonrpc-id":"forged","x":1}}}`, `"a"`},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, ""},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`, ""},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","_meta":"not an object"}}`, ""},
	} {
		msg, err := jsonrpc.DecodeMessage([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		req := stamp(msg).(*jsonrpc.Request)
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(req.Params, &p)
		got := string(p.Meta[metaRPCID])
		if tc.wantID == "" {
			if got != "" && got != `"forged"` {
				t.Errorf("%s: stamped %s", tc.in, got)
			}
			continue
		}
		if got != tc.wantID {
			t.Errorf("%s: id %s, want %s", tc.in, got, tc.wantID)
		}
		if strings.Contains(tc.in, `"x":1`) && string(p.Meta["x"]) != "1" {
			t.Errorf("%s: other _meta keys lost: %s", tc.in, req.Params)
		}
	}
}

func TestReadLineBoundsALine(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+10)
	r := bufio.NewReaderSize(strings.NewReader("short\n"+long+"\nnext"), 64<<10)
	for i, want := range []string{"short\n", "<nil>", "next"} {
		line, _ := readLine(r)
		got := string(line)
		if line == nil {
			got = "<nil>"
		}
		if got != want {
			t.Fatalf("line %d: %.20q, want %q", i, got, want)
		}
	}
}

func TestValidTraceparent(t *testing.T) {
	for tp, want := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": true,
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01": false,
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": false,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": false,
		"": false,
	} {
		if got := validTraceparent(tp); got != want {
			t.Errorf("validTraceparent(%q) = %v", tp, got)
		}
	}
}
