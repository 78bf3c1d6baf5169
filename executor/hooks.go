package executor

// hookPoint names a point of the executor's cycle where a test may act
// (the shutdown tests stop the executor there).
type hookPoint string

const (
	hookClaimLocked    hookPoint = "claim.locked"    // a claim's rows are locked, nothing decided yet
	hookClaimDecided   hookPoint = "claim.decided"   // decided, before the record and the commit
	hookClaimCommitted hookPoint = "claim.committed" // committed, before the runner has the jobs
	hookRunBegin       hookPoint = "run.begin"       // a call is about to run
	hookRunEnd         hookPoint = "run.end"         // a call returned, its outcome not yet sent
	hookCompleteBegin  hookPoint = "complete.begin"  // a completion batch is about to be written
	hookCompleteEnd    hookPoint = "complete.end"    // a completion batch is written
)

// testHooks lets a test act at the hook points; its at is nil outside
// tests, and set before Run.
type testHooks struct{ at func(hookPoint) }

func (h *testHooks) reach(p hookPoint) {
	if h != nil && h.at != nil {
		h.at(p)
	}
}
