// Package ledger is Execledger's event store and the Go client of its SQL API.
//
// The event log (table ledger.events) is the truth: every step of every tool
// request is an immutable event, stored as the exact bytes that were hashed.
// [Store] appends events with optimistic concurrency and reads them back by
// stream or in a gapless global order. [Client] is what a service uses to
// submit tool requests, cancel them and wait for their results; it calls the
// same SQL functions a service without Go would call.
package ledger
