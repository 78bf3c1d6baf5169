// Package mcpserver serves the Model Context Protocol (MCP) to agents so
// that every tool call is an Execledger request: authorized by the
// executor's policy, run in a sandbox and attested.
//
// A session acts as one principal: over stdio the login of the server's
// own pool, over streamable HTTP the login a bearer token maps to
// (ledger.mcp_tokens, migration 018), through a pool connected as that
// login, so that ledger.submit takes the principal from session_user as for
// any client. Each session is one run (mcp-<uuid>).
//
// tools/list is the catalog a session may call: echo, sleep, process.run
// when enabled and the enabled skills' tools (their manifests' descriptions
// and input schemas), less the tools the Cedar policy denies to the
// principal, evaluated as the executor evaluates a call. tools/call checks
// the arguments' size and schema, submits (idempotency key from the
// JSON-RPC id, the caller's traceparent), waits for the final state with
// progress notifications, and answers with the output and an [Outcome]. A
// client's cancellation is ledger.cancel; a client that goes away leaves
// its request to finish.
//
// Resources: execledger://requests/{id}/attestation (the DSSE envelope)
// and execledger://runs/{run}/bundle (an export bundle of the principal's
// requests of that run), both for execledger verify.
//
// The skill catalog, bindings, attestations and bundles are read through
// a reader pool, a ledger_auditor login; a request is served only when the
// principal's own login can see it.
package mcpserver
