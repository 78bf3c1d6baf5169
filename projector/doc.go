// Package projector will hold the projection engine: readers that follow
// ledger.events in the gapless delivery order of ledger.Store.ReadAll and
// maintain read models with their checkpoint in the same transaction.
//
// Until it lands, the one read model, ledger.request_status (behind the
// ledger.requests view), is written inline by the SQL API in the same
// transaction as the events it derives from.
package projector
