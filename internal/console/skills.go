package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/ledger"
)

// skillAction is one lifecycle request, the call `execledger skill NAME`
// makes.
type skillAction func(ctx context.Context, db ledger.DBTX, id, digest, text string) (registry.Result, error)

var skillActions = map[string]skillAction{
	"approve": registry.Approve,
	"enable": func(ctx context.Context, db ledger.DBTX, id, _, text string) (registry.Result, error) {
		return registry.Enable(ctx, db, id, text)
	},
	"disable": func(ctx context.Context, db ledger.DBTX, id, _, text string) (registry.Result, error) {
		return registry.Disable(ctx, db, id, text)
	},
	"rollback": func(ctx context.Context, db ledger.DBTX, id, _, text string) (registry.Result, error) {
		return registry.Rollback(ctx, db, id, text)
	},
	"remove": func(ctx context.Context, db ledger.DBTX, id, _, text string) (registry.Result, error) {
		return registry.Remove(ctx, db, id, text)
	},
}

// skillLifecycle runs a lifecycle request on a skill as the login: the
// SQL functions decide (the two-person rule for a quarantined artifact,
// which transitions are allowed) and record a refusal as skill.refused.
// An approval is bound to the artifact digest the page showed.
func (s *Server) skillLifecycle(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	name := r.PostForm.Get("action")
	do, ok := skillActions[name]
	if !ok {
		s.fail(w, sess, http.StatusBadRequest, "action must be approve, enable, disable, rollback or remove")
		return
	}
	res, err := do(r.Context(), sess.pool, id, r.PostForm.Get("digest"), strings.TrimSpace(r.PostForm.Get("text")))
	var d skillsData
	status := http.StatusOK
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, registry.ErrNotFound):
		d.Error, status = fmt.Sprintf("No skill %s.", id), http.StatusNotFound
	case isPermission(err):
		d.Error, status = fmt.Sprintf("Login %s may not change skills (ledger_skill_admin may).", sess.login), http.StatusForbidden
	case errors.As(err, &pe):
		d.Error, status = fmt.Sprintf("Skill %s: %s", id, pe.Message), http.StatusConflict
		if pe.Code == "P0002" {
			status = http.StatusNotFound
		}
	case err != nil:
		s.dbFail(w, sess, "the skill", err)
		return
	case !res.OK:
		d.Error, status = fmt.Sprintf("Skill %s: refused: %s (state %s; recorded as skill.refused).", id, res.Message, res.Status), http.StatusConflict
	default:
		s.log.Info("skill lifecycle", "login", sess.login, "skill", id, "action", name)
		d.Flash = fmt.Sprintf("Skill %s: %s (state %s).", id, res.Message, res.Status)
	}
	s.renderSkills(w, r, sess, status, d)
}
