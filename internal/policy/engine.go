package policy

import (
	"fmt"
	"slices"
)

// Engine authorizes tool requests against a fixed Cedar policy set. It is
// immutable after [Load] or [FromSources] and safe for concurrent use.
type Engine struct {
	sources []Source
	digest  string
	ids     []string
	// byAction holds, per action id, the policies whose action scope can
	// match that action, in load order.
	byAction map[string]policyList
}

// FromSources is [Load] for in-memory sources, for tests and embedding.
// Sources are evaluated in the given order; an empty list, an empty or
// duplicate source name, a parse error and a duplicate policy id are errors.
func FromSources(sources []Source) (*Engine, error) {
	if len(sources) == 0 {
		return nil, fmt.Errorf("policy: no policy sources given")
	}
	sources = cloneSources(sources)
	all, err := parseSources(sources)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	ids := make([]string, len(all))
	for i, p := range all {
		ids[i] = string(p.id)
	}
	return &Engine{
		sources: sources,
		digest:  digestSources(sources),
		ids:     ids,
		byAction: map[string]policyList{
			ActionToolExecute:  all.forAction(ActionToolExecute),
			ActionSkillExecute: all.forAction(ActionSkillExecute),
		},
	}, nil
}

// Digest identifies the policy set: "sha256:" followed by the hex SHA-256
// over the domain tag "execledger.policyset.v1" and then, for each source in
// order, the 8-byte big-endian length of its name, the name, the 8-byte
// big-endian length of its text and the text.
func (e *Engine) Digest() string { return e.digest }

// Sources returns a copy of what was loaded, in order (for the
// policy.published event).
func (e *Engine) Sources() []Source { return cloneSources(e.sources) }

// PolicyIDs returns the ids of all loaded policies in load order.
func (e *Engine) PolicyIDs() []string { return slices.Clone(e.ids) }
