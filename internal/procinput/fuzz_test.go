package procinput

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/execledger/execledger/ledger"
)

var fuzzSeeds = []string{
	`{"command":"ls"}`,
	`{"command":"ls","args":["ls","--cwd","sub","-l"]}`,
	`{"command":"cat","args":["link-etc/passwd"]}`,
	`{"command":"cat","args":["../x"],"cwd":"sub"}`,
	`{"command":"curl","args":["https://api.corp.local/x"],"requested_egress_hosts":["api.corp.local:443"]}`,
	`{"command":"git","args":["-c","core.pager=sh","log"]}`,
	`{"command":"env","args":["A=1","sh"]}`,
	`{"command":"sleep","args":["1"],"background":{"mode":"detached","lifetime_ms":5}}`,
	`{"command":"tool","args":["--out=file:///etc/x","-C/etc","if=/etc/shadow"],"timeout_ms":5}`,
	`{"command":"ls","cwd":"link-sub/deep","args":[],"requested_egress_hosts":null,"background":true}`,
	`{"command":"x","args":["http://[::1]:80/","user@h.example:p","a:1"]}`,
	`{"command":"ls","cwd":"/"}`,
	`{"command":"ls","args":[null]}`,
	`{"command":"ls"}{}`,
	`{"command":"env","args":["-iS","timeout -k1 5 'sh' -c id","x"]}`,
	`{"command":"find","args":[".","-exec","nice","-n5","sh","{}","+","-ok","xargs","-I{}","sh",";"]}`,
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := Parse(raw)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != ledger.KindInvalidInput {
				t.Fatalf("Parse error %v is not invalid_input", err)
			}
			return
		}
		// An accepted input survives a round trip (normalisation is
		// idempotent except for a repeated argv[0] or --cwd, which the
		// first Parse already consumed once).
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b)
		if err != nil {
			if reasonOf(t, err) == ReasonCwdConflict || reasonOf(t, err) == ReasonCwdFlagMissingValue {
				return
			}
			t.Fatalf("re-Parse(%s) = %v", b, err)
		}
		if len(in.Args) > 0 && (in.Args[0] == baseName(in.Command) || strings.HasPrefix(in.Args[0], "--cwd")) {
			return
		}
		if !reflect.DeepEqual(normalizeNil(again), normalizeNil(in)) {
			t.Fatalf("round trip changed %+v into %+v", in, again)
		}
	})
}

func FuzzCheck(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
	}
	ws := newTestWorkspace(f)
	f.Fuzz(func(t *testing.T, raw []byte, interpreters bool) {
		in, err := Parse(raw)
		if err != nil {
			return
		}
		p := ws.policy()
		p.AllowInterpreters = interpreters
		args := slices.Clone(in.Args)
		plan, err := Check(in, p)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check error %v is not an *Error", err)
			}
			return
		}
		if !within(ws.root, plan.Dir) || plan.Root != ws.root {
			t.Fatalf("accepted plan's Dir %q is outside the root %q", plan.Dir, ws.root)
		}
		if !slices.Equal(plan.Args, args) {
			t.Fatalf("plan rewrote args %q into %q", args, plan.Args)
		}
		for _, a := range plan.Args {
			if strings.HasPrefix(a, "/") && !strings.ContainsAny(a, " \t\n") {
				if c, err := (&workspace{root: ws.root}).resolve(plan.Dir, a, false); err != nil || !within(ws.root, c) {
					t.Fatalf("accepted absolute argument %q outside the workspace", a)
				}
			}
		}
		allow, err := p.egressAllowlist()
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range plan.EgressHosts {
			if !allow.AllowsHost(h) {
				t.Fatalf("plan allows egress to %q, not allowlisted", h)
			}
		}
	})
}
