package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	cedar "github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// Problem is one thing wrong with a policy file, at a line and column
// (1-based; 0 when the problem is the file's as a whole).
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Message)
}

// entityTypes are the types of the entity model (package documentation);
// a scope naming another type can never match.
var entityTypes = []cedar.EntityType{principalType, actionType, toolType, toolGroupType, skillType, channelType, deviceType}

// actions are the actions the engine evaluates.
var actions = []string{ActionToolExecute, ActionSkillExecute}

// parseErrorAt finds the position cedar-go puts in a parse error:
// `parse error at <input>:3:65 "}": invalid primary`.
var parseErrorAt = regexp.MustCompile(`at [^ ]*:(\d+):(\d+)`)

// Check parses and validates sources as [FromSources] would load them and
// also reports, with their lines, policies that can never apply: a scope
// naming an action the engine never evaluates or an entity type outside
// its model (a typo such as Action::"tool.exec" or Tools::"echo" would
// otherwise silently never match). It returns the engine when there is no
// problem.
func Check(sources []Source) (*Engine, []Problem) {
	var problems []Problem
	seenID := map[cedar.PolicyID]Problem{}
	for _, src := range sources {
		list, err := cedar.NewPolicyListFromBytes(src.Name, src.Text)
		if err != nil {
			problems = append(problems, parseProblem(src.Name, err))
			continue
		}
		for i, p := range list {
			pos := p.Position()
			at := Problem{File: src.Name, Line: pos.Line, Column: pos.Column}
			id, err := policyID(src.Name, i, p)
			if err != nil {
				at.Message = "@id must not be empty"
				problems = append(problems, at)
				continue
			}
			if prev, dup := seenID[id]; dup {
				at.Message = fmt.Sprintf("duplicate policy id %q (first at %s:%d)", id, prev.File, prev.Line)
				problems = append(problems, at)
				continue
			}
			seenID[id] = at
			for _, msg := range scopeProblems((*xast.Policy)(p.AST())) {
				at.Message = fmt.Sprintf("policy %q: %s", id, msg)
				problems = append(problems, at)
			}
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	e, err := FromSources(sources)
	if err != nil {
		return nil, []Problem{{File: sources[0].Name, Message: err.Error()}}
	}
	return e, nil
}

// parseProblem turns a cedar-go parse error into a Problem at its line.
func parseProblem(file string, err error) Problem {
	p := Problem{File: file, Message: err.Error()}
	if m := parseErrorAt.FindStringSubmatchIndex(err.Error()); m != nil {
		s := err.Error()
		p.Line, _ = strconv.Atoi(s[m[2]:m[3]])
		p.Column, _ = strconv.Atoi(s[m[4]:m[5]])
		p.Message = strings.Join(strings.Fields(s[:m[0]]+s[m[1]:]), " ")
	}
	return p
}

// scopeProblems lists what in a policy's scope can never match.
func scopeProblems(p *xast.Policy) []string {
	var out []string
	for _, uid := range scopeEntities(p.Action) {
		if uid.Type != actionType || !slices.Contains(actions, string(uid.ID)) {
			out = append(out, fmt.Sprintf("action %s is never evaluated: the actions are Action::%q and Action::%q",
				uid, ActionToolExecute, ActionSkillExecute))
		}
	}
	for _, s := range []struct {
		what  string
		scope any
	}{{"principal", p.Principal}, {"resource", p.Resource}} {
		for _, t := range scopeTypes(s.scope) {
			if !slices.Contains(entityTypes, t) {
				out = append(out, fmt.Sprintf("%s type %s does not exist: the types are Principal, Tool, ToolGroup, Skill, Channel and Device", s.what, t))
			}
		}
	}
	return out
}

// scopeEntities are the entities an action scope names.
func scopeEntities(scope xast.IsActionScopeNode) []cedar.EntityUID {
	switch s := scope.(type) {
	case xast.ScopeTypeEq:
		return []cedar.EntityUID{s.Entity}
	case xast.ScopeTypeIn:
		return []cedar.EntityUID{s.Entity}
	case xast.ScopeTypeInSet:
		return s.Entities
	}
	return nil
}

// scopeTypes are the entity types a principal or resource scope names.
func scopeTypes(scope any) []cedar.EntityType {
	switch s := scope.(type) {
	case xast.ScopeTypeEq:
		return []cedar.EntityType{s.Entity.Type}
	case xast.ScopeTypeIn:
		return []cedar.EntityType{s.Entity.Type}
	case xast.ScopeTypeIs:
		return []cedar.EntityType{s.Type}
	case xast.ScopeTypeIsIn:
		return []cedar.EntityType{s.Type, s.Entity.Type}
	}
	return nil
}
