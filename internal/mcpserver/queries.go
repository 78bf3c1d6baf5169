package mcpserver

// The package's SQL.
const (
	// queryWhoAmI is the login of a principal's pool and its principal.
	queryWhoAmI = `SELECT session_user::text, ledger.current_principal()`

	// queryBindings reads (as the reader) the channel and device an
	// administrator bound to a login.
	queryBindings = `SELECT max(channel), max(device) FROM ledger.principals WHERE login_role = $1`

	// queryEnabledSkillTools lists the tools of the enabled skills with
	// their artifacts' manifests.
	queryEnabledSkillTools = `SELECT t.tool_id, s.skill_id, a.version, a.publisher, f.content
FROM ledger.skills s
JOIN ledger.skill_tools t ON t.skill_id = s.skill_id
JOIN ledger.skill_artifacts a ON a.digest = s.artifact_digest
JOIN ledger.skill_files f ON f.artifact_digest = s.artifact_digest AND f.path = 'skill.toml'
WHERE s.status = 'enabled'
ORDER BY t.tool_id`

	// queryAttestation is the newest attestation envelope of a request's stream.
	queryAttestation = `SELECT payload ->> 'envelope' FROM ledger.events
WHERE stream = $1 AND type IN ('attestation.signed', 'execution.completed') ORDER BY version DESC LIMIT 1`

	// Tokens (migration 018).
	queryTokenLogin  = `SELECT ledger.mcp_token_login($1)`
	queryTokenCreate = `SELECT ledger.mcp_token_create($1, $2, $3, $4)`
	queryTokenRevoke = `SELECT ledger.mcp_token_revoke($1)`
	queryTokenList   = `SELECT token_id, login_role::text, coalesce(note, ''), created_by::text, created_at, revoked_at
FROM ledger.mcp_tokens ORDER BY created_at, token_id`
)
