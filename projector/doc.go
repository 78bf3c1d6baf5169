// Package projector is the projection engine: it follows ledger.events in
// the gapless delivery order of ledger.read_all and hands each event to the
// apply function its projection declares for the event's type, inside a
// transaction that also advances the projection's checkpoint (a row of
// ledger.projections). A crash therefore never applies an event twice and
// never skips one.
//
// One runner per projection works at a time across any number of engines
// and processes: a runner holds a session advisory lock on a connection of
// its own and runs its batches on that same connection, so the lock and the
// batch end together when the connection dies, and a standby, retrying
// every LockRetryInterval, takes over. An apply error (a panic included)
// stops that projection at that event, state failed and last_error
// "failed at position P: …", with a projection.failed event; the others go
// on. Engine.Retry clears the failure and the runner applies the event
// again.
//
// The read models come next. Until they land, the one read model,
// ledger.request_status (behind the ledger.requests view), is written
// inline by the SQL API in the same transaction as the events it derives
// from.
package projector
