package executor

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/attest"
)

// Skills finds the installed skills that serve tools no registered tool
// does, and checks that each may run, in the claim's transaction: the
// check and the claim see the same committed state, so a skill disabled
// or a key revoked before a claim commits stops that call. The
// implementation (internal/skill/runtime) loads the skill's stored files,
// hashes them against the installed payload digest and verifies the
// publisher's signature against the trust store at every claim.
type Skills interface {
	// Resolve returns, for each of tools that an installed skill serves,
	// the tool to run or the reason it may not run. Tools no skill serves
	// are absent. An error fails the claim (nothing is decided); an error
	// that is ErrSkillsNotReady asks for Prepare first.
	Resolve(ctx context.Context, tx pgx.Tx, tools []string) (map[string]SkillTool, error)
	// Prepare does, outside any transaction, the slow work Resolve found
	// missing (auditing and compiling an artifact's modules, seconds for a
	// large one), which Resolve then finds done. Inside the claim it would
	// hold the claimed rows locked and could outlast their lease.
	Prepare(ctx context.Context) error
}

// ErrSkillsNotReady is Resolve's answer when a claimed tool's skill is
// not yet built: the executor rolls the claim back, so nothing of it is
// recorded, calls Prepare, and claims again.
var ErrSkillsNotReady = errors.New("executor: skills need preparing")

// SkillTool is a tool of an installed skill as a claim found it.
type SkillTool struct {
	// Tool runs the call; nil when Refusal is set.
	Tool Tool
	// Skill identifies the artifact; its fields may be partly empty when
	// the skill was refused before its artifact could be read.
	Skill attest.Skill
	// RequiresApproval is the manifest's risk.requires_approval: the call
	// waits for ledger.approve like a sensitive tool's.
	RequiresApproval bool
	// Capabilities are the capability classes the skill is granted
	// (network, secrets_read, storage, channel), for Cedar's context.
	Capabilities []string
	// Refusal, when set, says why the skill may not run; the request is
	// denied with error_kind skill_not_active.
	Refusal string
}

// skillRef is the skill an attestation of j names, nil for other tools.
func (j *job) skillRef() *attest.Skill {
	if j == nil || j.skill == nil {
		return nil
	}
	s := j.skill.Skill
	return &s
}

// approvalReason says why j waits for approval.
func approvalReason(j *job) string {
	if j.skill != nil && j.skill.RequiresApproval {
		return "the skill's tool is marked requires_approval"
	}
	return "tool is marked sensitive"
}
