package bundle

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
)

// testRequest is a tool request as the executor records it. The fields
// after deny each build in one fault, as a test needs it.
type testRequest struct {
	id     string
	tool   string
	input  string // as PostgreSQL prints jsonb
	output string // compact JSON; "" for none
	deny   bool   // denied by policy
	// compact: written in the compact grammar (request.decided,
	// execution.completed), not the full one.
	compact bool

	noAttestation bool                                   // the outcome without its attestation
	signer        *attest.Signer                         // sign with this key, not the log's attestation key
	statement     func(*attest.Statement)                // edit the statement before signing
	envelope      func(env []byte) []byte                // edit the envelope after signing
	edit          map[string]func(payload string) string // edit the payload of an event type
	trailing      []string                               // event types recorded after the attestation

	leaves map[string]uint64        // the leaf of each event type (the last), once recorded
	events []func(l *testLog) Event // what is left to record
}

// append records an event of r's stream, with the payload edit of its
// type, if any.
func (r *testRequest) append(l *testLog, typ, payload string) Event {
	if f := r.edit[typ]; f != nil {
		payload = f(payload)
	}
	return l.append(requestPrefix+r.id, typ, payload)
}

const policyDigest = "sha256:5d4e0b2c91f1a7d6c3b8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"

// newRequest returns an allowed echo request with a realistic input and
// output.
func (l *testLog) newRequest() *testRequest {
	id, err := uuid.NewRandomFromReader(l.rnd)
	if err != nil {
		l.t.Fatal(err)
	}
	n := l.rnd.Uint64() % 1000
	return &testRequest{
		id:   id.String(),
		tool: "echo",
		input: fmt.Sprintf(`{"args": ["--verbose", "--format", "json"], "message": "deploy build %d of service checkout to staging", "labels": {"team": "payments", "ticket": "OPS-%d"}, "retries": 3}`,
			n, 4000+n),
		output: fmt.Sprintf(`{"echoed":{"message":"deploy build %d of service checkout to staging"},"bytes":47,"took_ms":%d}`, n, n%17),
	}
}

// steps are the events of r in the order the executor writes them.
func (r *testRequest) steps() []func(l *testLog) Event {
	s := []func(l *testLog) Event{
		func(l *testLog) Event {
			return r.append(l, typeRequested, fmt.Sprintf(`{"request_id" : "%s", "principal" : "svc-ci", "tool" : "%s", "run_id" : "ci-42", `+
				`"idempotency_key" : null, "input" : %s, "input_digest" : "%s", "context" : {"channel": "ci", "session": "s-7f3a"}, "context_bound" : ["channel"]}`,
				r.id, r.tool, r.input, attest.Digest([]byte(r.input))))
		},
		func(l *testLog) Event {
			return r.append(l, "request.claimed", marshal(map[string]any{
				"request_id": r.id, "claim_id": r.id[:8] + "-c1", "executor": "executor-1", "attempt": 1, "lease_ms": 30000,
			}))
		},
	}
	decided := map[string]any{
		"request_id": r.id, "decision": "allow", "stage": "policy", "reason_code": "policy.permit", "action": r.tool,
		"determining_policies": []string{"permit-ci-echo"}, "errors": []string{}, "policy_digest": policyDigest,
		"sensitive": false, "approved": false,
	}
	if r.compact {
		return append(s[:1], r.compactSteps(decided)...)
	}
	if r.deny {
		decided["decision"], decided["reason_code"] = "deny", "policy.forbid"
		decided["error_kind"], decided["message"] = "policy_denied", "forbid-echo-prod forbids echo for svc-ci"
		s = append(s, func(l *testLog) Event { return r.append(l, typeDecided, marshal(decided)) })
	} else {
		s = append(s,
			func(l *testLog) Event { return r.append(l, typeDecided, marshal(decided)) },
			func(l *testLog) Event {
				return r.append(l, "execution.started", marshal(map[string]any{
					"request_id": r.id, "attempt": 1, "executor": "builtin", "tier": "builtin", "timeout_ms": 30000,
				}))
			},
			func(l *testLog) Event {
				return r.append(l, typeFinished, marshal(map[string]any{
					"request_id": r.id, "attempt": 1, "state": "succeeded", "error_kind": nil, "error": nil, "timed_out": false,
					"exit_status": nil, "resources": map[string]int64{"wall_ms": 3, "cpu_ms": 1}, "enforcement": map[string]any{"builtin": true},
					"output": json.RawMessage(r.output), "executor": "builtin", "tier": "builtin",
				}))
			})
	}
	if !r.noAttestation {
		s = append(s, func(l *testLog) Event { return r.append(l, typeAttested, l.attestation(r)) })
	}
	for _, typ := range r.trailing {
		s = append(s, func(l *testLog) Event { return r.append(l, typ, marshal(map[string]any{"request_id": r.id})) })
	}
	return s
}

// compactSteps are r's events after tool.requested in the compact
// grammar: request.decided (claim, decision, execution), then
// execution.completed (outcome and attestation); a denial's
// request.decided is followed by attestation.signed.
func (r *testRequest) compactSteps(decided map[string]any) []func(l *testLog) Event {
	decided["executor"], decided["claim_id"], decided["attempt"] = "executor-1", r.id[:8]+"-c1", 1
	decided["lease_expires_at"], decided["origin"], decided["verdict"] = "2026-11-29T06:00:00Z", map[string]any{}, "run"
	var s []func(l *testLog) Event
	if r.deny {
		decided["decision"], decided["verdict"], decided["reason_code"] = "deny", "deny", "policy.forbid"
		decided["error_kind"], decided["message"] = "policy_denied", "forbid-echo-prod forbids echo for svc-ci"
		s = append(s, func(l *testLog) Event { return r.append(l, typeReqDecided, marshal(decided)) })
		if !r.noAttestation {
			s = append(s, func(l *testLog) Event { return r.append(l, typeAttested, l.attestation(r)) })
		}
	} else {
		decided["execution"] = map[string]any{"executor": "builtin", "attempt": 1, "tier": "builtin", "timeout_ms": 30000}
		s = append(s,
			func(l *testLog) Event { return r.append(l, typeReqDecided, marshal(decided)) },
			func(l *testLog) Event {
				p := map[string]any{
					"request_id": r.id, "attempt": 1, "state": "succeeded", "error_kind": nil, "error": nil, "timed_out": false,
					"exit_status": nil, "resources": map[string]int64{"wall_ms": 3, "cpu_ms": 1}, "enforcement": map[string]any{"builtin": true},
					"output": json.RawMessage(r.output), "executor": "builtin", "tier": "builtin",
				}
				var att map[string]any
				must(l.t, json.Unmarshal([]byte(l.attestation(r)), &att))
				for k, v := range att {
					p[k] = v
				}
				return r.append(l, typeCompleted, marshal(p))
			})
	}
	for _, typ := range r.trailing {
		s = append(s, func(l *testLog) Event { return r.append(l, typ, marshal(map[string]any{"request_id": r.id})) })
	}
	return s
}

// attestation signs r's outcome as the executor does, naming the newest
// checkpoint, and returns the attestation.signed payload.
func (l *testLog) attestation(r *testRequest) string {
	ex := attest.Execution{
		AttestationID: r.id + "/1", RequestID: r.id, Tool: r.tool, Principal: "svc-ci", RunID: "ci-42",
		Tier: "builtin", Executor: "builtin", ExecutorHost: "executor-1", PolicyDigest: policyDigest,
		Decision: attest.DecisionAllow, DecisionReason: "policy.permit",
		StartedAt: l.clock.Add(-3 * time.Millisecond), FinishedAt: l.clock, Success: true,
		Resources: map[string]int64{"wall_ms": 3, "cpu_ms": 1},
	}
	var output []byte
	if r.deny {
		ex.Tier, ex.Executor, ex.Decision, ex.DecisionReason = "", attest.ExecutorPolicy, attest.DecisionDeny, "policy.forbid"
		ex.Success, ex.ErrorKind, ex.Resources = false, "policy_denied", nil
	} else {
		output = []byte(r.output)
	}
	if n := len(l.checkpoints); n > 0 {
		c := l.checkpoints[n-1]
		ex.LogCheckpoint = &attest.LogCheckpoint{Origin: testOrigin, Size: c.Size, RootHash: base64.StdEncoding.EncodeToString(c.Root)}
	}
	st := attest.NewStatement([]byte(r.input), output, ex)
	if r.statement != nil {
		r.statement(&st)
	}
	signer := l.signer
	if r.signer != nil {
		signer = r.signer
	}
	_, env, digest, err := signer.Sign(st)
	if err != nil {
		l.t.Fatal(err)
	}
	if r.envelope != nil {
		env = r.envelope(env)
		digest = attest.Digest(env)
	}
	return marshal(map[string]any{"request_id": r.id, "attestation_digest": digest, "key_id": signer.KeyID(), "envelope": string(env)})
}

// record appends the requests' events, interleaved as concurrent
// executors write them, with noise events of other streams between them,
// and signs a checkpoint every `every` events and at the end.
func (l *testLog) record(reqs []*testRequest, noise, every int) {
	for _, r := range reqs {
		r.events, r.leaves = r.steps(), map[string]uint64{}
	}
	signed := 0
	for pending := true; pending; {
		pending = false
		for _, r := range reqs {
			if len(r.events) == 0 {
				continue
			}
			e := r.events[0](l)
			r.events, r.leaves[e.Type], pending = r.events[1:], e.Leaf, true
			for range noise {
				l.noise()
			}
			if every > 0 && len(l.events)-signed >= every {
				l.sign()
				signed = len(l.events)
			}
		}
	}
	if n := len(l.checkpoints); n == 0 || l.checkpoints[n-1].Size != uint64(len(l.events)) {
		l.sign()
	}
}

// noise appends an event of another stream: a channel message of 400 to
// 800 bytes.
func (l *testLog) noise() Event {
	body := strings.Repeat("ledger ", 50+int(l.rnd.Uint64()%60))
	return l.append("channel:ops", "channel.message", marshal(map[string]any{
		"from": "svc-ci", "kind": "status", "text": body, "seq": len(l.events),
	}))
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
