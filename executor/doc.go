// Package executor will hold the claim / lease / heartbeat / rescue loop,
// the authorization pipeline and the sandbox tier interface.
//
// The database side it builds on is in place: ledger.queue with its claim
// index, ledger.queue_waiters for NOTIFY-on-demand, and the cancel flag
// ledger.cancel sets on running requests.
package executor
