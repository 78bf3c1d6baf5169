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
// Cedar, a per-run budget, three events per request (the compact grammar) and a signed
// attestation. River runs a no-op worker with River's normal client
// configuration. Machines are shared and noisy, so the figure that means
// something is the ratio execledger/river of one run, not either rate alone.
//
// River is linked only with the river build tag (go build -tags river), so
// that the production binary carries none of it; without the tag, Validate
// refuses the systems river and both.
package bench
