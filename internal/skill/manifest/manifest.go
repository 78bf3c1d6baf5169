package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/mod/semver"
)

// FileName is the manifest's name in a skill's directory and artifact.
const FileName = "skill.toml"

// MaxSize bounds a manifest, in bytes; a larger one is refused unread.
const MaxSize = 64 << 10

// Manifest is a parsed, checked skill.toml.
type Manifest struct {
	ManifestVersion int
	SkillID         string
	Name            string
	Version         string // semantic version, no leading v, no build metadata
	Publisher       string
	Description     string
	Tools           []Tool
	Capabilities    Capabilities
	Quotas          Quotas
	Compat          Compat
}

// Tool is one of the skill's tools. A Tool from Parse is safe for
// concurrent use.
type Tool struct {
	ID, Name, Description string
	Module                string          // modules/NAME.wasm
	Entrypoint            string          // "" = the runtime's default (_start if exported, else run)
	InputSchema           json.RawMessage // compact JSON, keys sorted
	OutputSchema          json.RawMessage // nil when the manifest gives none
	RequiresApproval      bool

	input, output *jsonschema.Schema
}

// Capabilities are what the skill asks for; a call gets only what the
// operator's policy grants too. Parse never leaves a list nil.
type Capabilities struct {
	HTTPEgressAllowlist  []string
	Secrets              []string
	StoragePrefixes      []string
	Channels             []string
	FilesystemReadRoots  []string // always empty after Parse: refused
	FilesystemWriteRoots []string // always empty after Parse: refused
	WildcardOptIn        bool
}

// Quotas are the skill's limits; 0 means the host's default.
type Quotas struct {
	WallClockTimeoutMS int64
	FuelBudget         int64
	MaxMemoryBytes     int64
}

// Compat says which Execledger the skill needs.
type Compat struct {
	MinExecledger string // semantic version; "" for any
}

// FieldError is one problem at a line of the manifest. Line is 0 when
// the problem has no line of its own (a missing top-level key, a file too
// large); Key is the dotted path of the value, with an array's index as a
// part ("tools.1.risk.requires_approval").
type FieldError struct {
	Line int
	Key  string
	Msg  string
}

func (e FieldError) String() string {
	at := FileName
	if e.Line > 0 {
		at = fmt.Sprintf("%s:%d", FileName, e.Line)
	}
	if e.Key != "" {
		return at + ": " + e.Key + ": " + e.Msg
	}
	return at + ": " + e.Msg
}

// ParseError is every problem Parse found in a manifest, in line order.
type ParseError struct {
	Errors []FieldError
}

// Error is the problems one per line, each "skill.toml:LINE: KEY: MSG".
func (e *ParseError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, f := range e.Errors {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// Parse decodes and checks a manifest. A manifest it refuses gives a
// *ParseError listing every problem found.
func Parse(data []byte) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, &ParseError{[]FieldError{{Msg: fmt.Sprintf("is %d bytes; the limit is %d", len(data), MaxSize)}}}
	}
	lines, tooDeep := keyLines(data)
	if tooDeep > 0 {
		return nil, &ParseError{[]FieldError{{Line: tooDeep, Msg: fmt.Sprintf("nests keys, arrays and tables deeper than %d levels", maxNesting)}}}
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, &ParseError{[]FieldError{syntaxError(err)}}
	}
	v := &validator{lines: lines}
	m := v.manifest(v.table(nil, doc))
	if err := v.err(); err != nil {
		return nil, err
	}
	return m, nil
}

// syntaxError is a document the TOML decoder refused.
func syntaxError(err error) FieldError {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return FieldError{Line: pe.Position.Line, Msg: "TOML: " + pe.Message}
	}
	return FieldError{Msg: "TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}
}

// Modules returns the modules the tools name, sorted, without duplicates.
func (m *Manifest) Modules() []string {
	out := make([]string, 0, len(m.Tools))
	for _, t := range m.Tools {
		out = append(out, t.Module)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Tool returns the tool with this id, or nil.
func (m *Manifest) Tool(id string) *Tool {
	for i := range m.Tools {
		if m.Tools[i].ID == id {
			return &m.Tools[i]
		}
	}
	return nil
}

// CheckCompat reports whether the running Execledger version meets the
// manifest's min_execledger. "" and "dev" (a development build) meet
// anything; otherwise running is a semantic version, with or without a
// leading v.
func (m *Manifest) CheckCompat(running string) error {
	if m.Compat.MinExecledger == "" || running == "" || running == "dev" {
		return nil
	}
	r := "v" + strings.TrimPrefix(running, "v")
	if !semver.IsValid(r) {
		return fmt.Errorf("manifest: running version %q is not a semantic version", running)
	}
	if semver.Compare(r, "v"+m.Compat.MinExecledger) < 0 {
		return fmt.Errorf("manifest: skill %s needs Execledger %s or later; this is %s", m.SkillID, m.Compat.MinExecledger, running)
	}
	return nil
}

// Wildcards returns the entries of c's lists that are wildcards ("*" or
// "*.domain"), in the lists' order, for audit messages.
func (c Capabilities) Wildcards() []string {
	var out []string
	for _, list := range [][]string{c.HTTPEgressAllowlist, c.Secrets, c.StoragePrefixes, c.Channels} {
		for _, s := range list {
			if isWildcard(s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func isWildcard(s string) bool { return s == "*" || strings.HasPrefix(s, "*.") }
