package executor

import (
	"context"
	"sync/atomic"

	"github.com/execledger/execledger/internal/policy"
)

// policyRef is the policy in force, which SetPolicy replaces while the
// executor runs. Each claim batch authorizes against the engine it loaded
// once, and records that engine's digest with every decision and
// attestation of the batch.
type policyRef struct{ p atomic.Pointer[policy.Engine] }

func (r *policyRef) load() *policy.Engine { return r.p.Load() }

// SetPolicy puts pol in force for the claims that follow: it first
// records it (policy.published, unless the log's newest policy is already
// pol), so that no decision ever names a policy digest the log lacks. A
// claim batch already authorizing keeps the policy it started with. On
// an error the previous policy stays in force.
func (e *Executor) SetPolicy(ctx context.Context, pol *policy.Engine) error {
	if err := e.publishPolicy(ctx, pol); err != nil {
		return err
	}
	e.policy.p.Store(pol)
	return nil
}

// Policy is the policy in force.
func (e *Executor) Policy() *policy.Engine { return e.policy.load() }
