package gate

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// What a claim reads about the skills serving its tools, and their files.
const (
	sqlSkillRows = `
SELECT q.tool, s.skill_id, s.status, s.artifact_digest, a.version, a.publisher, a.key_id, a.payload_digest, a.public_key,
       a.signature, k.public_key, k.publisher, k.revoked_at IS NOT NULL, cardinality(s.approvals) >= 2
FROM unnest($1::text[]) AS q(tool)
JOIN ledger.skill_tools t ON t.tool_id = q.tool
JOIN ledger.skills s ON s.skill_id = t.skill_id
JOIN ledger.skill_artifacts a ON a.digest = s.artifact_digest
LEFT JOIN ledger.skill_trust_keys k ON k.key_id = a.key_id`
	sqlSkillFiles = `SELECT artifact_digest, path, content FROM ledger.skill_files WHERE artifact_digest = ANY($1::text[])`
)

func readRows(ctx context.Context, tx pgx.Tx, tools []string) ([]row, error) {
	tools = slices.Compact(slices.Sorted(slices.Values(tools)))
	rows, err := tx.Query(ctx, sqlSkillRows, tools)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.tool, &x.skillID, &x.status, &x.digest, &x.version, &x.publisher, &x.keyID, &x.payloadDigest,
			&x.publicKey, &x.signature, &x.trustedKey, &x.trustedPublisher, &x.revoked, &x.approved)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	return out, nil
}

// readFiles returns the files of each artifact in digests.
func readFiles(ctx context.Context, tx pgx.Tx, digests []string) (map[string]map[string][]byte, error) {
	out := map[string]map[string][]byte{}
	if len(digests) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, sqlSkillFiles, digests)
	if err != nil {
		return nil, fmt.Errorf("skill files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d, p string
		var c []byte
		if err := rows.Scan(&d, &p, &c); err != nil {
			return nil, fmt.Errorf("skill files: %w", err)
		}
		if out[d] == nil {
			out[d] = map[string][]byte{}
		}
		out[d][p] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("skill files: %w", err)
	}
	return out, nil
}
