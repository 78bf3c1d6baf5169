package manifest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/mod/semver"
)

var (
	// idPattern is a skill or tool id: dotted lower-case segments.
	idPattern        = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+$`)
	publisherPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	modulePattern    = regexp.MustCompile(`^modules/[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}\.wasm$`)
	exportPattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)

// reserved are the first segments a skill or tool id may not have: the
// ledger's own names and its built-in tools'.
var reserved = []string{"execledger", "ledger", "process", "plugin", "system", "builtin", "echo", "sleep", "skill",
	"trust", "log", "policy", "channel", "request", "run", "projection", "wasi", "env", "internal", "admin", "root"}

// Limits of a manifest's values.
const (
	maxIDLen    = 128
	maxNameLen  = 128
	maxDescLen  = 1024
	maxTools    = 64
	maxTimeout  = 600_000
	maxFuel     = 1_000_000_000_000
	pageSize    = 65536
	maxMemory   = 65536 * pageSize
	manifestV1  = 1
	semverShape = "MAJOR.MINOR.PATCH"
)

// validator turns a decoded manifest into a Manifest, collecting every
// problem, each at its line.
type validator struct {
	lines map[string]int // path.id() → line, from keyLines
	errs  []FieldError
}

func (v *validator) fail(at path, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Line: v.line(at), Key: at.String(), Msg: fmt.Sprintf(format, args...)})
}

// line is at's line, else its nearest ancestor's (a missing key is
// reported at its table's line), else 0.
func (v *validator) line(at path) int {
	for ; len(at) > 0; at = at[:len(at)-1] {
		if n, ok := v.lines[at.id()]; ok {
			return n
		}
	}
	return 0
}

// err is the problems found, in line order, or nil.
func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(v.errs, func(a, b FieldError) int { return a.Line - b.Line })
	return &ParseError{v.errs}
}

func (v *validator) manifest(t *table) *Manifest {
	m := &Manifest{ManifestVersion: v.manifestVersion(t)}
	m.SkillID = v.id(t, "skill_id", "")
	m.Name = v.text(t, "name", maxNameLen, true, false)
	m.Version = v.semver(t, "version", true)
	m.Publisher = v.publisher(t)
	m.Description = v.text(t, "description", maxDescLen, false, true)
	m.Tools = v.tools(t, m.SkillID)
	m.Capabilities = v.capabilities(t.sub("capabilities"))
	m.Quotas = v.quotas(t.sub("quotas"))
	m.Compat = Compat{MinExecledger: v.compat(t.sub("compat"))}
	t.unknown()
	return m
}

func (v *validator) manifestVersion(t *table) int {
	n, ok := t.integer("manifest_version")
	switch {
	case !t.has("manifest_version"):
		v.fail(t.at.key("manifest_version"), "missing (it must be %d)", manifestV1)
	case ok && n != manifestV1:
		v.fail(t.at.key("manifest_version"), "%d is not a version this Execledger reads (%d)", n, manifestV1)
	}
	return manifestV1
}

// required is the string at key, reporting it missing or empty.
func (v *validator) required(t *table, key string) (string, bool) {
	s, ok := t.str(key)
	switch {
	case !t.has(key):
		v.fail(t.at.key(key), "missing")
	case ok && s == "":
		v.fail(t.at.key(key), "is empty")
	}
	return s, ok && s != ""
}

// str is the string at key, reported missing or empty if required.
func (v *validator) str(t *table, key string, required bool) (string, bool) {
	if required {
		return v.required(t, key)
	}
	return t.str(key)
}

// text is a human-readable string of at most limit bytes, without control
// characters (multiline allows newlines and tabs).
func (v *validator) text(t *table, key string, limit int, required, multiline bool) string {
	s, ok := v.str(t, key, required)
	if !ok {
		return s
	}
	if len(s) > limit {
		v.fail(t.at.key(key), "is %d bytes; the limit is %d", len(s), limit)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) }) >= 0 {
		v.fail(t.at.key(key), "holds a control character")
	}
	return s
}

// semver is a semantic version without a leading v or build metadata.
func (v *validator) semver(t *table, key string, required bool) string {
	s, ok := v.str(t, key, required)
	if !ok || s == "" && !required {
		return s
	}
	base, _, build := strings.Cut(s, "+")
	switch {
	case strings.HasPrefix(s, "v"):
		v.fail(t.at.key(key), "%q is not a semantic version (%s): no leading v", s, semverShape)
	case semver.Canonical("v"+base) != "v"+base:
		v.fail(t.at.key(key), "%q is not a semantic version (%s)", s, semverShape)
	case build:
		v.fail(t.at.key(key), "%q carries build metadata (+...), which is refused", s)
	}
	return s
}

func (v *validator) publisher(t *table) string {
	s, ok := v.required(t, "publisher")
	if ok && !publisherPattern.MatchString(s) {
		v.fail(t.at.key("publisher"), "%q is not a publisher name (lower-case letters, digits, - and _; at most 64)", s)
	}
	return s
}

// id is a skill id, or a tool id under skill (when skill is not "").
func (v *validator) id(t *table, key, skill string) string {
	s, ok := v.required(t, key)
	if !ok {
		return s
	}
	first, _, _ := strings.Cut(s, ".")
	switch at := t.at.key(key); {
	case len(s) > maxIDLen || !idPattern.MatchString(s):
		v.fail(at, "%q is not an id: dotted lower-case segments such as acme.hello, at most %d bytes", s, maxIDLen)
	case slices.Contains(reserved, first):
		v.fail(at, "%q begins with %q, a name Execledger reserves", s, first)
	case skill != "" && s != skill && !strings.HasPrefix(s, skill+"."):
		v.fail(at, "%q is neither the skill id %s nor under it (%s.NAME)", s, skill, skill)
	}
	return s
}

func (v *validator) tools(t *table, skillID string) []Tool {
	list, ok := t.tables("tools")
	switch at := t.at.key("tools"); {
	case !t.has("tools"):
		v.fail(at, "missing: a skill has at least one [[tools]]")
	case ok && len(list) == 0:
		v.fail(at, "is empty: a skill has at least one tool")
	case len(list) > maxTools:
		v.fail(at, "%d tools; the limit is %d", len(list), maxTools)
	}
	seen := map[string]bool{}
	out := make([]Tool, 0, len(list))
	for _, tt := range list {
		tool := v.tool(tt, skillID)
		if tool.ID != "" && seen[tool.ID] {
			v.fail(tt.at.key("id"), "%q is defined twice", tool.ID)
		}
		seen[tool.ID] = true
		out = append(out, tool)
	}
	return out
}

func (v *validator) tool(t *table, skillID string) Tool {
	tool := Tool{
		ID:               v.id(t, "id", skillID),
		Name:             v.text(t, "name", maxNameLen, true, false),
		Description:      v.text(t, "description", maxDescLen, true, true),
		Module:           v.module(t),
		Entrypoint:       v.entrypoint(t),
		RequiresApproval: v.risk(t.sub("risk")),
	}
	tool.InputSchema, tool.input = v.schema(t, "input_schema", true)
	tool.OutputSchema, tool.output = v.schema(t, "output_schema", false)
	t.unknown()
	return tool
}

func (v *validator) module(t *table) string {
	s, ok := v.required(t, "module")
	if ok && (!modulePattern.MatchString(s) || strings.Contains(s, "..")) {
		v.fail(t.at.key("module"), "%q is not a module path: modules/NAME.wasm (letters, digits, _ - and ., no ..)", s)
	}
	return s
}

func (v *validator) entrypoint(t *table) string {
	s, ok := t.str("entrypoint")
	if ok && s != "" && !exportPattern.MatchString(s) {
		v.fail(t.at.key("entrypoint"), "%q is not an export name (letters, digits and _, at most 64)", s)
	}
	return s
}

func (v *validator) risk(t *table) bool {
	b := t.boolean("requires_approval")
	t.unknown()
	return b
}

func (v *validator) quotas(t *table) Quotas {
	q := Quotas{
		WallClockTimeoutMS: v.quota(t, "wall_clock_timeout_ms", 1, maxTimeout),
		FuelBudget:         v.quota(t, "fuel_budget", 1, maxFuel),
		MaxMemoryBytes:     v.quota(t, "max_memory_bytes", pageSize, maxMemory),
	}
	if q.MaxMemoryBytes%pageSize != 0 {
		v.fail(t.at.key("max_memory_bytes"), "%d is not a multiple of %d (WebAssembly pages)", q.MaxMemoryBytes, pageSize)
	}
	t.unknown()
	return q
}

// quota is an integer from lo to hi, or 0 for the host's default.
func (v *validator) quota(t *table, key string, lo, hi int64) int64 {
	n, _ := t.integer(key)
	if n != 0 && (n < lo || n > hi) {
		v.fail(t.at.key(key), "%d is out of range: %d to %d, or 0 for the host's default", n, lo, hi)
	}
	return n
}

func (v *validator) compat(t *table) string {
	s := v.semver(t, "min_execledger", false)
	t.unknown()
	return s
}
