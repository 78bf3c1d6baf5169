package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/policy"
)

func newPolicyCmd(e *env) *cobra.Command {
	return newGroupCmd("policy", "Check Cedar policy files; explain a request's authorization",
		`Policy checks Cedar policy files before an executor loads them, and explains which policies
decided a request and why.`,
		`  execledger policy check .execledger/policy.cedar
  execledger policy explain 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80`,
		newPolicyCheckCmd(e), newPolicyExplainCmd(e))
}

func newPolicyCheckCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Parse and validate Cedar policy files as serve and dev load them",
		Long: `Check parses the files as one policy set, in the order given, as serve and dev load
policy.files, and reports every problem with its file, line and column: a syntax error, an
empty or duplicate @id, and a policy that can never apply (an action other than
Action::"tool.execute" and Action::"skill.execute", an entity type the executor never
sends). Exit 0 when the set loads (it prints the policy ids and the set's digest), 3 when
it has problems, 1 when a file cannot be read.`,
		Example: `  execledger policy check .execledger/policy.cedar
  execledger policy check base.cedar billing.cedar --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fail(exitUsage, "%s wants FILE...; got no arguments", commandName(cmd))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error { return runPolicyCheck(e, args) },
	}
	e.jsonFlag(cmd, "print one JSON object")
	return cmd
}

// policyCheckResult is policy check's --json output.
type policyCheckResult struct {
	OK       bool             `json:"ok"`
	Digest   string           `json:"policy_digest,omitempty"`
	IDs      []string         `json:"policy_ids,omitempty"`
	Problems []policy.Problem `json:"problems,omitempty"`
}

func runPolicyCheck(e *env, paths []string) error {
	sources := make([]policy.Source, len(paths))
	byName := map[string]string{}
	for i, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			return fail(exitError, "%v", err)
		}
		sources[i] = policy.Source{Name: filepath.Base(p), Text: text}
		if prev, dup := byName[sources[i].Name]; dup {
			return fail(exitUsage, "%s and %s have the same base name, which names a file's policies: rename one", prev, p)
		}
		byName[sources[i].Name] = p
	}
	eng, problems := policy.Check(sources)
	for i := range problems {
		if p, ok := byName[problems[i].File]; ok {
			problems[i].File = p
		}
	}
	res := policyCheckResult{OK: eng != nil, Problems: problems}
	if eng != nil {
		res.Digest, res.IDs = eng.Digest(), eng.PolicyIDs()
	}
	if e.json {
		if err := printJSON(e, res); err != nil {
			return err
		}
	} else if eng != nil {
		fmt.Fprintf(e.io.out, "ok: %d policies (%s)\npolicy digest: %s\n", len(res.IDs), strings.Join(res.IDs, ", "), res.Digest)
	} else {
		for _, p := range problems {
			fmt.Fprintln(e.io.out, p.String())
		}
		fmt.Fprintf(e.io.out, "not ok: %d problem(s); an executor would refuse this policy set\n", len(problems))
	}
	if eng == nil {
		return exitCode(exitNotOK)
	}
	return nil
}

func newPolicyExplainCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain ID",
		Short: "Say which policies decided a request and why",
		Long: `Explain reads a request's recorded decisions (its request.decided events, or policy.decided
in a log written before them) and the policy set
they name (the policy.published event with that digest), and prints each decision in plain
words, then what each policy of that set makes of the request: it applies (a permit that
applies permits, a forbid forbids), it does not apply (its scope or condition is false for
this request), or it fails to evaluate. It says so when the policy in force now (the log's
newest policy.published) differs from the one that decided. It reads the log: it needs
ledger_auditor, ledger_executor or ledger_admin. Exit 5 when there is no such request.`,
		Example: `  execledger policy explain 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80
  execledger policy explain 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fail(exitUsage, "%q is not a request id (a UUID)", args[0])
			}
			_, pool, err := e.connectReader(cmd.Context(), e.config)
			if err != nil {
				return fail(exitError, "%v", err)
			}
			defer pool.Close()
			x, err := explainRequest(cmd.Context(), pool, id)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e, x)
			}
			printExplanation(e.io.out, x)
			return nil
		},
	}
	e.jsonFlag(cmd, "print one JSON object")
	e.configFlag(cmd)
	return cmd
}

// The queries of policy explain.
const (
	queryRequestEvents = `SELECT type, payload FROM ledger.events
WHERE stream = 'request:' || $1::text AND type IN ('tool.requested', 'request.decided', 'policy.decided') ORDER BY version`
	queryPublishedPolicy = `SELECT payload FROM ledger.events
WHERE stream = 'policy' AND type = 'policy.published' AND payload ->> 'policy_digest' = $1 ORDER BY version DESC LIMIT 1`
	queryNewestPolicy = `SELECT payload ->> 'policy_digest' FROM ledger.events
WHERE stream = 'policy' AND type = 'policy.published' ORDER BY version DESC LIMIT 1`
)

// explanation is policy explain's output.
type explanation struct {
	RequestID     uuid.UUID              `json:"request_id"`
	Principal     string                 `json:"principal"`
	Tool          string                 `json:"tool"`
	RunID         string                 `json:"run_id,omitempty"`
	Decisions     []explainedDecision    `json:"decisions"`
	PolicyDigest  string                 `json:"policy_digest,omitempty"` // of the last decision
	CurrentDigest string                 `json:"current_policy_digest,omitempty"`
	PolicyMissing bool                   `json:"policy_missing,omitempty"` // no policy.published with PolicyDigest
	Policies      []policy.PolicyVerdict `json:"policies,omitempty"`
	Reevaluated   string                 `json:"reevaluated,omitempty"` // the recorded policy set's decision now, in words
}

// explainedDecision is one request.decided (or policy.decided) event,
// with its reason in words.
type explainedDecision struct {
	Stage               string   `json:"stage"`
	Decision            string   `json:"decision"`
	Action              string   `json:"action"`
	ReasonCode          string   `json:"reason_code"`
	DeterminingPolicies []string `json:"determining_policies"`
	Errors              []string `json:"errors,omitempty"`
	ErrorKind           string   `json:"error_kind,omitempty"`
	Message             string   `json:"message,omitempty"`
	PolicyDigest        string   `json:"policy_digest"`
	Plain               string   `json:"plain"`
}

// decidedPayload is what explain reads of request.decided (the members it
// shares with policy.decided).
type decidedPayload struct {
	Stage               string   `json:"stage"`
	Decision            string   `json:"decision"`
	Action              string   `json:"action"`
	ReasonCode          string   `json:"reason_code"`
	DeterminingPolicies []string `json:"determining_policies"`
	Errors              []string `json:"errors"`
	ErrorKind           string   `json:"error_kind"`
	Message             string   `json:"message"`
	PolicyDigest        string   `json:"policy_digest"`
	Sensitive           bool     `json:"sensitive"`
	Origin              struct {
		ClaimedChannel string `json:"claimed_channel"`
		ClaimedDevice  string `json:"claimed_device"`
		ChannelBound   bool   `json:"channel_bound"`
		DeviceBound    bool   `json:"device_bound"`
	} `json:"origin"`
	Skill *struct {
		ID        string `json:"id"`
		Version   string `json:"version"`
		Publisher string `json:"publisher"`
	} `json:"skill"`
}

func explainRequest(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) (explanation, error) {
	x := explanation{RequestID: id}
	rows, err := pool.Query(ctx, queryRequestEvents, id.String())
	if err != nil {
		return x, logReadFailure(err)
	}
	var req policy.Request
	var decided []decidedPayload
	found := false
	for rows.Next() {
		var typ string
		var payload []byte
		if err := rows.Scan(&typ, &payload); err != nil {
			return x, fail(exitError, "%v", err)
		}
		found = true
		switch typ {
		case "tool.requested":
			var p struct {
				Principal string  `json:"principal"`
				Tool      string  `json:"tool"`
				RunID     *string `json:"run_id"`
				Context   struct {
					Session string `json:"session"`
				} `json:"context"`
			}
			if err := json.Unmarshal(payload, &p); err != nil {
				return x, fail(exitError, "tool.requested: %v", err)
			}
			req.Principal, req.Tool, req.Session = p.Principal, p.Tool, p.Context.Session
			if p.RunID != nil {
				req.RunID = *p.RunID
			}
		case "request.decided", "policy.decided":
			var d decidedPayload
			if err := json.Unmarshal(payload, &d); err != nil {
				return x, fail(exitError, "%s: %v", typ, err)
			}
			decided = append(decided, d)
		}
	}
	if err := rows.Err(); err != nil {
		return x, logReadFailure(err)
	}
	if !found {
		return x, fail(exitNotFound, "no request %s in the log", id)
	}
	x.Principal, x.Tool, x.RunID = req.Principal, req.Tool, req.RunID
	for _, d := range decided {
		r := req
		r.Channel, r.Device, r.ChannelBound, r.DeviceBound = d.Origin.ClaimedChannel, d.Origin.ClaimedDevice, d.Origin.ChannelBound, d.Origin.DeviceBound
		r.Sensitive = d.Sensitive
		if d.Skill != nil {
			r.Skill, r.SkillVersion, r.SkillPublisher = d.Skill.ID, d.Skill.Version, d.Skill.Publisher
		}
		pd := policy.Decision{Allowed: d.Decision == "allow", ReasonCode: d.ReasonCode, DeterminingPolicies: d.DeterminingPolicies,
			Errors: d.Errors, PolicyDigest: d.PolicyDigest, Action: d.Action}
		plain := d.Message
		if strings.HasPrefix(d.ReasonCode, "policy.") {
			plain = pd.Plain(r)
		}
		if plain == "" {
			plain = "allowed at stage " + d.Stage
		}
		x.Decisions = append(x.Decisions, explainedDecision{Stage: d.Stage, Decision: d.Decision, Action: d.Action, ReasonCode: d.ReasonCode,
			DeterminingPolicies: d.DeterminingPolicies, Errors: d.Errors, ErrorKind: d.ErrorKind, Message: d.Message,
			PolicyDigest: d.PolicyDigest, Plain: plain})
		req = r
	}
	if len(decided) == 0 {
		return x, nil
	}
	x.PolicyDigest = decided[len(decided)-1].PolicyDigest
	if err := pool.QueryRow(ctx, queryNewestPolicy).Scan(&x.CurrentDigest); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return x, logReadFailure(err)
	}
	eng, err := publishedPolicy(ctx, pool, x.PolicyDigest)
	if err != nil {
		return x, err
	}
	if eng == nil {
		x.PolicyMissing = true
		return x, nil
	}
	x.Policies = eng.Explain(req)
	x.Reevaluated = eng.Authorize(req).Plain(req)
	return x, nil
}

// publishedPolicy loads the policy set the log published with digest; nil
// when the log has none.
func publishedPolicy(ctx context.Context, pool *pgxpool.Pool, digest string) (*policy.Engine, error) {
	var payload []byte
	err := pool.QueryRow(ctx, queryPublishedPolicy, digest).Scan(&payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, logReadFailure(err)
	}
	var p struct {
		Files []struct{ Name, Text string } `json:"files"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fail(exitError, "policy.published: %v", err)
	}
	sources := make([]policy.Source, len(p.Files))
	for i, f := range p.Files {
		sources[i] = policy.Source{Name: f.Name, Text: []byte(f.Text)}
	}
	eng, err := policy.FromSources(sources)
	if err != nil {
		return nil, fail(exitError, "the published policy set %s does not load: %v", digest, err)
	}
	return eng, nil
}

// logReadFailure says which roles read the log when the login lacks them.
func logReadFailure(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return fail(exitError, "policy explain reads the log (ledger.events), which this login may not: it needs ledger_auditor, ledger_executor or ledger_admin (%s)", pe.Message)
	}
	return fail(exitError, "%v", err)
}

func printExplanation(w io.Writer, x explanation) {
	run := x.RunID
	if run == "" {
		run = "-"
	}
	fmt.Fprintf(w, "Request %s: principal %q, tool %q, run %s\n", x.RequestID, x.Principal, x.Tool, run)
	if len(x.Decisions) == 0 {
		fmt.Fprintln(w, "No decision yet: no executor has authorized it.")
		return
	}
	fmt.Fprintln(w, "\nDecisions:")
	for _, d := range x.Decisions {
		fmt.Fprintf(w, "  %s at stage %s (%s, reason %s): %s\n", d.Decision, d.Stage, d.Action, d.ReasonCode, d.Plain)
	}
	if last := x.Decisions[len(x.Decisions)-1]; last.Decision != "allow" && !strings.HasPrefix(last.ReasonCode, "policy.") &&
		len(last.DeterminingPolicies) == 0 {
		fmt.Fprintf(w, "\nCedar did not decide this request: it was denied at stage %s, before or without the policy.\n", last.Stage)
	}
	fmt.Fprintf(w, "\nPolicy set: %s\n", x.PolicyDigest)
	switch {
	case x.CurrentDigest == "":
	case x.CurrentDigest == x.PolicyDigest:
		fmt.Fprintln(w, "  It is the policy in force now (the log's newest policy.published).")
	default:
		fmt.Fprintf(w, "  The policy in force now differs: %s. What follows is the policy that decided.\n", x.CurrentDigest)
	}
	if x.PolicyMissing {
		fmt.Fprintln(w, "  The log has no policy.published with this digest: its text is unknown here.")
		return
	}
	fmt.Fprintln(w, "\nWhat each policy of that set makes of the request:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range x.Policies {
		verdict := "does not apply (its scope or condition is false)"
		switch {
		case v.Error != "":
			verdict = "fails to evaluate: " + v.Error
		case v.Applies && v.Effect == "permit":
			verdict = "APPLIES: permits"
		case v.Applies:
			verdict = "APPLIES: forbids"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s:%d\t%s\n", v.ID, v.Effect, v.Action, v.File, v.Line, verdict)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nRe-evaluated now against that set: %s\n", x.Reevaluated)
}
