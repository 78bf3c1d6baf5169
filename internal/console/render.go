package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pageData is what every page template gets.
type pageData struct {
	Title string
	Nav   string // the navigation entry to mark current
	User  *userView
	CSRF  string
	Data  any
}

type userView struct {
	Login     string
	Principal string
	Roles     []string
}

func (s *Server) page(sess *session, title, nav string, data any) pageData {
	return pageData{Title: title, Nav: nav, CSRF: sess.csrf, Data: data,
		User: &userView{Login: sess.login, Principal: sess.principal, Roles: sess.roles}}
}

var funcs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04:05.000Z")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05.000Z")
		}
		return fmt.Sprint(t)
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"deref": func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	},
	"orDash": func(p *string) string {
		if p == nil || *p == "" {
			return "—"
		}
		return *p
	},
	"pretty": prettyJSON,
	"join":   strings.Join,
	"short":  short,
}

// prettyJSON indents JSON for display; html/template escapes the result.
func prettyJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

var pageNames = []string{"signin", "requests", "request", "approvals", "audit", "health", "quotas", "skills", "log", "error"}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render writes page name; it renders into a buffer first so that a
// template error never sends half a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, d pageData) {
	var b bytes.Buffer
	if err := s.pages[name].Execute(&b, d); err != nil {
		s.log.Error("render", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = b.WriteTo(w)
}

// renderFragment writes one template of page name, without the layout:
// the part of a page that console.js replaces in place.
func (s *Server) renderFragment(w http.ResponseWriter, name, fragment string, data any) {
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, fragment, data); err != nil {
		s.log.Error("render", "page", name, "fragment", fragment, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = b.WriteTo(w)
}

type errorData struct {
	Message string
}

// fail renders an error page; a permission error names what the login
// lacks, other database errors their message.
func (s *Server) fail(w http.ResponseWriter, sess *session, status int, msg string) {
	s.render(w, status, "error", s.page(sess, "Error", "", errorData{Message: msg}))
}

func (s *Server) dbFail(w http.ResponseWriter, sess *session, what string, err error) {
	if isPermission(err) {
		s.fail(w, sess, http.StatusForbidden, fmt.Sprintf("Login %s may not read %s: its roles (%s) do not grant it.",
			sess.login, what, strings.Join(sess.roles, ", ")))
		return
	}
	s.log.Warn("query failed", "what", what, "login", sess.login, "error", err)
	s.fail(w, sess, http.StatusInternalServerError, fmt.Sprintf("Reading %s failed: %v", what, err))
}

func isPermission(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// short abbreviates an id or a digest for a table cell; the full value is
// on the linked page.
func short(s string) string {
	n := 8
	if strings.HasPrefix(s, "sha256:") {
		n = len("sha256:") + 12
	}
	if len(s) > n+4 {
		return s[:n] + "…"
	}
	return s
}
