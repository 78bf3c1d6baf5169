// Package bench measures end-to-end throughput and latency of the executor
// pipeline, with River as the baseline measured in the same run.
//
// Every run gets a fresh database on the server it is given, created as
// execledger_bench_<random> and dropped afterwards. Two modes:
//
//   - burndown: insert N requests first, then start the workers and time
//     how long they take until all N are final; throughput is N / drain time.
//   - continuous: S submitters insert at full speed while the workers work,
//     for a fixed duration; throughput is what completed in that window.
//
// Execledger runs the full echo pipeline: ledger.submit, a batched claim,
// Cedar, a per-run budget, three events per request (the compact grammar)
// and a signed attestation. Two baselines: river runs a no-op worker with
// River's normal client configuration; river-audited is what a team would
// build on River instead of Execledger: each job appends its state changes
// (inserted, started, completed) to an insert-only audit table whose rows
// are chained by SHA-256, and signs its outcome with Ed25519, the writes in
// the job's own transactions; the audit log is verified after every run.
// Machines are shared and noisy, so the figures that mean something are the
// ratios of one run (execledger/river, execledger/river-audited), not any
// rate alone.
//
// River is linked only with the river build tag (go build -tags river), so
// that the production binary carries none of it; without the tag, Validate
// refuses every system but execledger.
package bench
