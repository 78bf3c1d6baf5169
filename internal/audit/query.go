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
	queryAuditOrder       = ` ORDER BY recorded_at, position, kind`
	queryAuditOrderNewest = ` ORDER BY recorded_at DESC, position DESC, kind DESC`
)

// Filter selects rows of the audit trail; zero fields select everything.
type Filter struct {
	Principal, Tool string
	Since, Until    time.Time // [Since, Until)
	Request         uuid.UUID
	// Decision: only decision rows with this decision (allow or deny).
	Decision string
	// Kind: only rows of this kind (decision or outcome).
	Kind string
	// Newest: newest first (the console's pages), the reverse of the
	// trail's order.
	Newest bool
	// After: only rows after this one, in the order read (Newest's or the
	// trail's).
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
	if f.Kind != "" {
		add("kind = $%d", f.Kind)
	}
	if c := f.After; c != nil {
		// The time bound bounds the index scan; the row comparison
		// skips the rows up to and including the cursor's.
		cmp, bound := ">", ">="
		if f.Newest {
			cmp, bound = "<", "<="
		}
		add("recorded_at "+bound+" $%d", c.RecordedAt)
		args = append(args, c.Position, c.Kind)
		conds[len(conds)-1] += fmt.Sprintf(" AND (recorded_at, position, kind) %s ($%d, $%d, $%d)", cmp, len(args)-2, len(args)-1, len(args))
	}
	q := queryAuditTrail
	if len(conds) > 0 {
		q += "\nWHERE " + strings.Join(conds, " AND ")
	}
	if f.Newest {
		q += queryAuditOrderNewest
	} else {
		q += queryAuditOrder
	}
	if f.Limit > 0 {
		args = append(args, f.Limit+1)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	return q, args
}
