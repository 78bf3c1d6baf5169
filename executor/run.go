package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// start runs an authorized job on its own goroutine; the caller has made
// sure a slot is free.
func (e *Executor) start(j *job) {
	e.slots <- struct{}{}
	j.ctx, j.cancel = context.WithCancelCause(context.Background())
	j.started = time.Now()
	e.mu.Lock()
	e.inflight[j.id] = j
	e.metrics.setInflight(len(e.inflight))
	e.mu.Unlock()
	go func() {
		res := e.execute(j)
		o := outcome{job: j, result: res, finished: time.Now()}
		j.done.Store(true)
		// The slot is freed only once the completer has the outcome, so the
		// calls claimed but not yet written stay bounded when it falls behind.
		e.outcomes <- o
		<-e.slots
		e.poke()
	}()
}

// execute runs the tool under the executor's timeout, turning a panic or a
// malformed result into a runtime_failure rather than a lost request.
func (e *Executor) execute(j *job) (res Result) {
	ctx, cancel := context.WithTimeout(j.ctx, e.cfg.ToolTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			e.logger.Error("tool panicked", slog.String("tool", j.tool), slog.String("request_id", j.id.String()), slog.Any("panic", p))
			res = failure("runtime_failure", fmt.Sprintf("%s: internal error", j.tool))
		}
	}()
	res = j.impl.Run(ctx, Call{RequestID: j.id, Attempt: j.attempt, Principal: j.principal, RunID: j.runID, Input: j.input})
	if res.ErrorKind == "" && ctx.Err() != nil {
		// Finished, but only after it was told to stop: report why it was told.
		res = interrupted(ctx, j.tool)
	}
	if len(res.Output) > 0 && !json.Valid(res.Output) {
		res = failure("runtime_failure", j.tool+": produced output that is not JSON")
	}
	if res.Resources == nil {
		res.Resources = map[string]int64{}
	}
	res.Resources["wall_ms"] = time.Since(j.started).Milliseconds()
	return res
}
