package registry

// The statements of the skills' SQL API (migrations/012_skills.sql).
const (
	sqlInstall = `SELECT ok, status, message FROM ledger.skill_install($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	sqlAudit   = `SELECT ok, status, message FROM ledger.skill_record_audit($1, $2, $3, $4, $5)`
	sqlApprove = `SELECT ok, status, message FROM ledger.skill_approve($1, $2, $3)`
	sqlEnable  = `SELECT ok, status, message FROM ledger.skill_enable($1, $2)`
	sqlDisable = `SELECT ok, status, message FROM ledger.skill_disable($1, $2)`
	sqlRollbk  = `SELECT ok, status, message FROM ledger.skill_rollback($1, $2)`
	sqlRemove  = `SELECT ok, status, message FROM ledger.skill_remove($1, $2)`

	sqlTrustAdd    = `SELECT ledger.skill_trust_add($1, $2, $3, $4)`
	sqlTrustRevoke = `SELECT ledger.skill_trust_revoke($1, $2)`

	sqlSkills = `
SELECT s.skill_id, s.status, a.version, a.publisher, a.key_id, s.artifact_digest, a.payload_digest, a.installed_by,
       s.approvals, coalesce(s.failed_checks, '[]'::jsonb)::text, s.cleared, s.previous_digest, a.tools, s.stream_version,
       s.updated_at
FROM ledger.skills s JOIN ledger.skill_artifacts a ON a.digest = s.artifact_digest`
	sqlSkillsAll = sqlSkills + ` ORDER BY s.skill_id`
	sqlSkillOne  = sqlSkills + ` WHERE s.skill_id = $1`

	sqlHistory = `SELECT version, type, payload, actor, recorded_at FROM ledger.skill_history($1)`

	sqlKeys = `
SELECT key_id, publisher, public_key, source, added_by, added_at, revoked_at, coalesce(revoked_by, ''), coalesce(revoke_reason, '')
FROM ledger.skill_trust_keys ORDER BY publisher, added_at, key_id`

	sqlTrustVersion = `SELECT coalesce(max(version), 0) FROM ledger.events WHERE stream = 'skill:trust'`
)
