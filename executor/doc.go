// Package executor turns pending requests into final ones. It claims them
// in batches under a lease, authorizes each in the claim's own transaction
// (input caps, run and budget, skill status, support, Cedar policy, the
// tool's own checks, approval), runs what may run, and completes batches of
// outcomes with a signed attestation each. Every step is an event. Expired
// leases are rescued: a request that had not started, or whose tool is
// safe to repeat, runs again in its place in the queue; any other ends
// failed with error_kind outcome_unknown.
//
// # Services
//
// An Executor is a set of services, each with a goroutine of its own and
// a small interface to the others, the way River splits a client:
//
//   - the claimer (claimer.go, authorize.go) claims and authorizes
//     batches and hands what may run to the runner (jobRunner);
//   - the runner (run.go) runs calls, at most Config.Workers at once, and
//     keeps the claims this executor holds (claimHolder, settledJobs);
//   - the completer (completer.go) writes finished calls in batches;
//   - the heartbeat (heartbeat.go) extends the leases held and stops calls
//     whose claims were lost or cancelled;
//   - the listener (listener.go) turns NOTIFYs into wake-ups: of the
//     claimer on ledger_request_pending, of the heartbeat's flag read on
//     ledger_request_cancel;
//   - the rescuer (rescuer.go) settles expired leases and approvals, and
//     attests requests that ended in SQL.
//
// Every transaction that writes has one shape, settle (record.go): lock
// and read rows, decide what becomes of each, sign, record it all with one
// call of ledger.executor_record (which checks the claims), commit.
//
// A stop ends the claimer between claims, never inside one: what a claim
// commits always reaches the runner, whose calls get the shutdown grace
// and whose outcomes the completer writes before Run returns, so a stopped
// executor holds no claim (docs/chaos.md, "Graceful stop").
//
// # Tools
//
// A Tool is a built-in or a sandbox tier's runner. Its Prepare runs at
// claim time, after the policy allowed the call and before the run's
// budget is charged or execution.started recorded: a Refusal there ends
// the request denied, with the refusal's error kind, at no cost to the
// run. Run then gets what Prepare returned. Results name their error kinds
// and states with the ledger package's types, the one set the contract
// defines.
package executor
