package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// queryAuditTrail reads ledger.audit_trail as the caller's login, so its
// row security decides what the caller sees. Query's conditions go
// between the two; each names an indexed column directly (no "$1 IS NULL
// OR …"), so a principal and time range is a range scan of
// audit_trail_principal_time_idx under any plan, generic or custom. The
// order is total (position and kind are the table's key), which a Cursor
// needs.
const (
	queryAuditTrail = `SELECT position, tx_id::text, recorded_at, kind, event_type, request_id, principal, tool,
       run_id, attempt, decision, stage, reason_code, determining_policies, policy_digest, approver,
       state, tier, error_kind, resources, output_bytes, attestation_digest, attestation_position,
       request_position
FROM ledger.audit_trail`
	queryAuditOrder = ` ORDER BY recorded_at, position, kind`
)

// Filter selects rows of the audit trail; zero fields select everything.
type Filter struct {
	Principal, Tool string
	Since, Until    time.Time // [Since, Until)
	Request         uuid.UUID
	// Decision: only decision rows with this decision (allow or deny).
	Decision string
	// After: only rows after this one, in the trail's order.
	After *Cursor
	Limit int // 0: no limit
}

// Query is the statement and arguments for f. It asks for one row more
// than the limit, so the caller can tell that more rows match.
func Query(f Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.Principal != "" {
		add("principal = $%d", f.Principal)
	}
	if f.Tool != "" {
		add("tool = $%d", f.Tool)
	}
	if !f.Since.IsZero() {
		add("recorded_at >= $%d", f.Since)
	}
	if !f.Until.IsZero() {
		add("recorded_at < $%d", f.Until)
	}
	if f.Request != uuid.Nil {
		add("request_id = $%d", f.Request)
	}
	if f.Decision != "" {
		add("decision = $%d", f.Decision)
	}
	if c := f.After; c != nil {
		// recorded_at >= bounds the index scan; the row comparison
		// skips the rows up to and including the cursor's.
		add("recorded_at >= $%d", c.RecordedAt)
		args = append(args, c.Position, c.Kind)
		conds[len(conds)-1] += fmt.Sprintf(" AND (recorded_at, position, kind) > ($%d, $%d, $%d)", len(args)-2, len(args)-1, len(args))
	}
	q := queryAuditTrail
	if len(conds) > 0 {
		q += "\nWHERE " + strings.Join(conds, " AND ")
	}
	q += queryAuditOrder
	if f.Limit > 0 {
		args = append(args, f.Limit+1)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	return q, args
}
