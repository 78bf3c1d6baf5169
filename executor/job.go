package executor

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/execledger/execledger/internal/contract"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/ledger"
)

// job is one claimed request on its way through an executor.
type job struct {
	id        uuid.UUID
	claimID   uuid.UUID
	attempt   int
	version   int64 // head of stream request:<id>, advanced as events are appended
	principal string
	tool      string
	runID     string
	input     json.RawMessage
	context   ledger.RequestContext
	// channelBound and deviceBound: the context's channel and device were
	// set by an administrator for the submitting login role, not claimed.
	channelBound, deviceBound bool
	inputDigest               []byte
	approved                  bool
	wasCharged                bool // an earlier claim already paid the run's budget
	submittedAt               time.Time
	leaseExpiresAt            time.Time // the claim's lease, as claimed

	impl       Tool       // nil for an unknown tool
	skill      *SkillTool // set when an installed skill serves the tool
	decision   policy.Decision
	prepared   any              // what impl.Prepare returned, for Run
	deniedKind ledger.ErrorKind // the claim denied it: why
	started    time.Time
	result     Result // an inline call's outcome (InlineTool), recorded in the claim
	trace      jobTrace

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   atomic.Bool // the call has returned; its outcome is on its way to the completer
}

func (j *job) charged() bool { return j.wasCharged }

// call is the job's Call, as Prepare and Run see it.
func (j *job) call() Call {
	return Call{RequestID: j.id, Attempt: j.attempt, Principal: j.principal, RunID: j.runID, Input: j.input, Prepared: j.prepared}
}

// policyRequest is the job as Cedar sees it, without the executor's
// knowledge of the tool (sensitivity, skill): the channel and device
// reach policies as bound values only when the submitting login role
// has them bound, and always as claims (policy.Request.Origin).
func (j *job) policyRequest() policy.Request {
	return policy.Request{
		Principal: j.principal, Tool: j.tool, Session: j.context.Session, RunID: j.runID,
		Channel: j.context.Channel, Device: j.context.Device, ChannelBound: j.channelBound, DeviceBound: j.deviceBound,
	}
}

func (j *job) stream() string { return contract.RequestStream(j.id.String()) }

// next returns the version the next event of the job's stream takes.
func (j *job) next() int64 {
	j.version++
	return j.version
}

// outcome is a finished job, waiting to be completed in a batch.
type outcome struct {
	job      *job
	result   Result
	finished time.Time
}
