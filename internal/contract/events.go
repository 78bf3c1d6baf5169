package contract

import (
	"fmt"
	"slices"
	"sort"
)

// Event is one event type of the contract.
type Event struct {
	Type string
	// Streams are the forms of the streams it is written to (StreamForm).
	Streams []string
	// Writers are the source files that write it, relative to the
	// repository root: one, or several that write one payload shape.
	Writers []string
	// Required are the payload members every event of the type has today;
	// Optional those some have (a denial's message, a skill tool's skill,
	// a stop's end details). An event has no other members.
	Required, Optional []string
	// Legacy are members only events written by earlier versions have:
	// readers accept them, no writer writes them any more.
	Legacy []string
	// ToolRecorded: a tool's call may record it (executor.Event), checked
	// by the executor and by ledger.executor_record.
	ToolRecorded bool
	// Request: the executor writes it on a request's stream while it holds
	// the request's claim (ledger.executor_record accepts it there).
	Request bool
}

// Fields returns Required and Optional, sorted.
func (e Event) Fields() []string {
	f := slices.Concat(e.Required, e.Optional)
	sort.Strings(f)
	return f
}

const (
	sqlAPI        = "migrations/api/"
	sqlExecutor   = "migrations/executor/"
	sqlLog        = "migrations/log/"
	sqlProjection = "migrations/projections/"
	sqlSkills     = "migrations/skills/"
)

// Events lists every event type the ledger writes, or wrote once and still
// reads. Each type's payload members are DESIGN.md's and docs/bundle.md's.
var Events = []Event{
	// A request's life, on its stream.
	{Type: "tool.requested", Streams: []string{RequestPrefix}, Writers: []string{sqlAPI + "submit.sql"},
		Required: []string{"request_id", "principal", "tool", "input", "input_digest", "run_id", "idempotency_key", "context", "context_bound"}},
	// The compact grammar (issue 24): a claim, its authorization decision
	// and, for a call that runs, the budget it is charged and the start of
	// its execution, as one event; the call's outcome and its attestation
	// as another (execution.completed). The types they stand for
	// (request.claimed, policy.decided, budget.consumed, execution.started;
	// execution.finished + attestation.signed) keep their meaning: logs
	// written before hold them, and every reader takes both grammars.
	{Type: "request.decided", Streams: []string{RequestPrefix}, Writers: []string{"executor/claimer.go"}, Request: true,
		Required: slices.Concat(claimFacts, decisionFacts, []string{"verdict"}),
		// budget: {principal, run_id, used, max_calls} when the call is
		// charged to its run; execution: {executor, attempt, tier,
		// timeout_ms} when it starts (verdict "run").
		Optional: slices.Concat(decisionOptional, []string{"budget", "execution"})},
	{Type: "execution.completed", Streams: []string{RequestPrefix}, Writers: []string{"executor/completer.go"}, Request: true,
		Required: slices.Concat(outcomeFacts, attestationFacts)},
	// The full grammar.
	{Type: "request.claimed", Streams: []string{RequestPrefix}, Writers: []string{sqlExecutor + "claim_requests.sql"},
		Required: claimFacts},
	{Type: "policy.decided", Streams: []string{RequestPrefix}, Request: true,
		Legacy: slices.Concat([]string{"request_id"}, decisionFacts, decisionOptional)},
	{Type: "approval.requested", Streams: []string{RequestPrefix}, Writers: []string{"executor/claimer.go"}, Request: true,
		Required: []string{"request_id", "tool", "input_digest", "reason", "expires_in_ms"}},
	{Type: "approval.granted", Streams: []string{RequestPrefix}, Writers: []string{sqlAPI + "decide_approval.sql"},
		Required: approvalDecision},
	{Type: "approval.denied", Streams: []string{RequestPrefix}, Writers: []string{sqlAPI + "decide_approval.sql", "executor/rescuer.go"}, Request: true,
		Required: approvalDecision},
	{Type: "budget.consumed", Streams: []string{RequestPrefix}, Request: true,
		Legacy: []string{"request_id", "principal", "run_id", "used", "max_calls"}},
	{Type: "execution.started", Streams: []string{RequestPrefix}, Request: true,
		Legacy: []string{"request_id", "executor", "attempt", "tier", "timeout_ms"}},
	// A cancelled call's outcome stays in the full grammar: its
	// request.cancelled comes between it and its attestation.
	{Type: "execution.finished", Streams: []string{RequestPrefix}, Writers: []string{"executor/completer.go"}, Request: true,
		Required: outcomeFacts},
	{Type: "request.cancelled", Streams: []string{RequestPrefix}, Writers: []string{sqlAPI + "cancel.sql", "executor/completer.go"}, Request: true,
		Required: []string{"request_id", "reason", "previous_state"}},
	{Type: "lease.expired", Streams: []string{RequestPrefix}, Writers: []string{"executor/rescuer.go"}, Request: true,
		Required: []string{"request_id", "executor", "claim_id", "rescued_by", "action", "started", "safe_to_repeat"},
		Optional: []string{"state", "error_kind", "error", "tier"}},
	{Type: "attestation.signed", Streams: []string{RequestPrefix}, Writers: []string{"executor/attestation.go"}, Request: true,
		Required: slices.Concat([]string{"request_id"}, attestationFacts)},
	// What a tool's call records, on its request's stream (channel.message
	// on its channel's).
	// A call's connections, on its request's stream; a background
	// process's, on its process stream.
	{Type: "egress.connection", Streams: []string{RequestPrefix, ProcessPrefix}, Writers: []string{"internal/sandbox/processrun/egress.go"}, Request: true, ToolRecorded: true,
		Required: []string{"host", "port", "method", "address", "allowed", "reason", "end", "bytes_up", "bytes_down",
			"duration_ms", "started_at"},
		Optional: []string{"detail"}},
	{Type: "capability.used", Streams: []string{RequestPrefix}, Writers: []string{"internal/sandbox/wasmrun/callcaps.go"}, Request: true, ToolRecorded: true,
		Required: []string{"class", "name", "handle", "outcome"}, Optional: []string{"bytes", "status", "key"}},
	{Type: "channel.published", Streams: []string{RequestPrefix}, Writers: []string{"internal/sandbox/wasmrun/callcaps.go"}, Request: true, ToolRecorded: true,
		Required: []string{"channel", "bytes", "sha256", "redacted"}},
	{Type: "channel.message", Streams: []string{ChannelPrefix}, Writers: []string{"internal/sandbox/wasmrun/callcaps.go"}, Request: true, ToolRecorded: true,
		// message when it is JSON, else message_base64.
		Required: []string{"channel"}, Optional: []string{"message", "message_base64"}},
	// Runs.
	{Type: "run.budget_set", Streams: []string{RunPrefix}, Writers: []string{sqlAPI + "set_run_budget.sql"},
		Required: []string{"principal", "run_id", "max_calls"}},
	{Type: "run.ended", Streams: []string{RunPrefix}, Writers: []string{sqlAPI + "end_run.sql"},
		Required: []string{"principal", "run_id", "reason"}},
	// Background processes, on their process streams.
	{Type: "process.started", Streams: []string{ProcessPrefix}, Writers: []string{"ledger/processes.go"},
		Required: []string{"handle", "request_id", "principal", "run_id", "owner", "owner_role", "executor", "tier", "mode", "command",
			"args", "pid", "pid_start", "started_at", "expires_at", "lifetime_ms"}},
	{Type: "process.stop_requested", Streams: []string{ProcessPrefix}, Writers: []string{"internal/sandbox/processrun/proctools.go"},
		Required: []string{"handle", "request_id", "principal", "run_id"}},
	{Type: "process.ended", Streams: []string{ProcessPrefix}, Writers: []string{"internal/sandbox/processrun/background.go"},
		// Its own supervisor writes how it ended; another executor's
		// recovery of an orphan (killed) who recovered it.
		Required: []string{"handle", "end_reason"},
		Optional: []string{"exit_code", "signal", "error_kind", "error", "output", "resources",
			"owner", "recovered_by", "processes_killed", "rebooted"}},
	{Type: "process.lost", Streams: []string{ProcessPrefix}, Writers: []string{"internal/sandbox/processrun/background.go"},
		Required: []string{"handle", "end_reason", "owner", "recovered_by", "processes_killed", "rebooted"}},
	{Type: "process.owner_role_recorded", Streams: []string{ProcessPrefix}, Legacy: []string{"owner_role"}},
	// Skills and the trust store, on skill streams.
	{Type: "skill.installed", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_install.sql"},
		Required: skillState("installed_by", "payload_digest", "previous_digest", "size", "tools", "trust")},
	{Type: "skill.audited", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_record_audit.sql"},
		Required: skillState("checks", "failed_checks", "passed", "trigger")},
	{Type: "skill.quarantined", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_record_audit.sql"},
		Required: skillState("failed_checks", "reason", "trigger")},
	{Type: "skill.approved", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_approve.sql"},
		Required: skillState("approver", "approvals_needed", "note")},
	{Type: "skill.enabled", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_enable.sql"},
		Required: skillState("note")},
	{Type: "skill.disabled", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_disable.sql", sqlSkills + "skill_trust_revoke.sql"},
		Required: skillState("reason", "revoked_key_id")},
	{Type: "skill.rolled_back", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_rollback.sql"},
		Required: skillState("from_digest", "from_version", "reason")},
	{Type: "skill.removed", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_remove.sql"},
		Required: skillState("reason")},
	{Type: "skill.refused", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_refuse.sql"},
		Required: []string{"skill_id", "action", "actor", "artifact_digest", "reason", "status"}},
	{Type: "trust.key_added", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_trust_add.sql", sqlSkills + "skill_install.sql"},
		Required: []string{"actor", "key_id", "public_key", "publisher", "source", "note", "skill_id"}},
	{Type: "trust.key_revoked", Streams: []string{SkillPrefix}, Writers: []string{sqlSkills + "skill_trust_revoke.sql"},
		Required: []string{"actor", "key_id", "publisher", "reason"}},
	// The executors' policy, the Merkle log, the projections.
	{Type: "policy.published", Streams: []string{PolicyStream}, Writers: []string{"executor/executor.go"},
		Required: []string{"policy_digest", "policy_ids", "files"}},
	{Type: "checkpoint.signed", Streams: []string{LogStream}, Writers: []string{sqlLog + "log_checkpoint.sql"},
		Required: []string{"origin", "size", "root_hash", "note"}},
	{Type: "log.unsealed_event", Streams: []string{LogStream}, Writers: []string{sqlLog + "log_record_faults.sql"},
		Required: []string{"position", "tx_id", "stream", "version", "type", "reason"}},
	{Type: "projection.failed", Streams: []string{ProjectionPrefix}, Writers: []string{sqlProjection + "projection_fail.sql"},
		Required: []string{"projection", "position", "tx_id", "event_type", "error", "checkpoint"}},
	{Type: "projection.retried", Streams: []string{ProjectionPrefix}, Writers: []string{sqlProjection + "projection_retry.sql"},
		Required: []string{"projection", "position", "tx_id", "previous_error", "note"}},
	{Type: "projection.rebuild_started", Streams: []string{ProjectionPrefix}, Writers: []string{sqlProjection + "projection_rebuild_begin.sql"},
		Required: []string{"projection"}},
	{Type: "projection.rebuilt", Streams: []string{ProjectionPrefix}, Writers: []string{sqlProjection + "projection_rebuild_swap.sql"},
		Required: []string{"projection", "tx_id", "position", "rows", "started_at"}},
}

// The members the compact grammar's events share with the full grammar's.
var (
	// claimFacts: request.claimed's.
	claimFacts = []string{"request_id", "executor", "claim_id", "attempt", "lease_expires_at"}
	// decisionFacts and decisionOptional: policy.decided's, but its
	// request_id.
	decisionFacts = []string{"stage", "decision", "action", "origin", "policy_digest", "determining_policies", "errors",
		"reason_code", "sensitive", "approved"}
	decisionOptional = []string{"error_kind", "message", "skill", "tool_reason"}
	// outcomeFacts: execution.finished's.
	outcomeFacts = []string{"request_id", "state", "error_kind", "error", "output", "executor", "attempt", "tier", "timed_out",
		"exit_status", "resources", "enforcement"}
	// attestationFacts: attestation.signed's, but its request_id.
	attestationFacts = []string{"attestation_digest", "envelope", "key_id"}
)

// Attesting lists the event types that carry a request's attestation
// (attestation_digest, envelope, key_id).
var Attesting = []string{"attestation.signed", "execution.completed"}

// IsAttesting reports whether events of type t carry a request's
// attestation.
func IsAttesting(t string) bool { return slices.Contains(Attesting, t) }

// approvalDecision is the one payload of approval.granted and
// approval.denied, whoever decides: an approver (ledger.approve,
// ledger.deny_approval) or the rescuer when the approval expired (reason
// "expired", approver null, timeout_ms set).
var approvalDecision = []string{"request_id", "reason", "approver", "note", "input_digest", "previous_state", "error", "timeout_ms"}

// skillState is the payload of a skill's lifecycle events: the skill's
// state after the event, and what this event adds.
func skillState(extra ...string) []string {
	return append([]string{"skill_id", "version", "status", "artifact_digest", "publisher", "key_id", "approvals", "actor"}, extra...)
}

// EventType returns the contract's event of type t.
func EventType(t string) (Event, bool) {
	i := slices.IndexFunc(Events, func(e Event) bool { return e.Type == t })
	if i < 0 {
		return Event{}, false
	}
	return Events[i], true
}

// TypesWhere lists the types of the events for which keep holds, in the
// order of Events.
func TypesWhere(keep func(Event) bool) []string {
	var ts []string
	for _, e := range Events {
		if keep(e) {
			ts = append(ts, e.Type)
		}
	}
	return ts
}

// CheckEvent reports how an event of type t on stream, whose payload has
// the members keys, departs from the contract; nil when it does not.
// Types outside the contract are the caller's business (the event store
// takes any well-formed type) unless they sit on a stream of the
// contract's forms.
func CheckEvent(t, stream string, keys []string) error {
	e, ok := EventType(t)
	form := StreamForm(stream)
	switch {
	case !ok && form == "":
		return nil
	case !ok:
		return fmt.Errorf("event type %s on stream %s is not in the contract", t, stream)
	case !slices.Contains(e.Streams, form):
		return fmt.Errorf("%s on stream %s: the contract puts it on %v streams", t, stream, e.Streams)
	}
	var missing, extra []string
	for _, k := range e.Required {
		if !slices.Contains(keys, k) {
			missing = append(missing, k)
		}
	}
	for _, k := range keys {
		if !slices.Contains(e.Required, k) && !slices.Contains(e.Optional, k) && !slices.Contains(e.Legacy, k) {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) > 0 {
		return fmt.Errorf("%s payload: missing %v, not in the contract %v", t, missing, extra)
	}
	return nil
}
