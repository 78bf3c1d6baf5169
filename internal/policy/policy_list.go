package policy

import (
	"errors"
	"fmt"
	"iter"
	"strconv"

	cedar "github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// idAnnotation is the annotation that names a policy.
const idAnnotation = "id"

// namedPolicy is a parsed policy with its execledger id.
type namedPolicy struct {
	id     cedar.PolicyID
	policy *cedar.Policy
}

// policyList is an ordered policy set. Unlike cedar.PolicySet (a map) it
// iterates in load order, so diagnostics come out deterministically.
type policyList []namedPolicy

var _ cedar.PolicyIterator = policyList(nil)

// All implements cedar.PolicyIterator.
func (l policyList) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] {
	return func(yield func(cedar.PolicyID, *cedar.Policy) bool) {
		for _, p := range l {
			if !yield(p.id, p.policy) {
				return
			}
		}
	}
}

// parseSources parses every source in order and assigns policy ids.
func parseSources(sources []Source) (policyList, error) {
	var all policyList
	seenID := map[cedar.PolicyID]string{}
	seenName := map[string]bool{}
	for _, src := range sources {
		if src.Name == "" {
			return nil, errors.New("source with empty name")
		}
		if seenName[src.Name] {
			return nil, fmt.Errorf("duplicate source name %q", src.Name)
		}
		seenName[src.Name] = true
		list, err := cedar.NewPolicyListFromBytes(src.Name, src.Text)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", src.Name, err)
		}
		for i, p := range list {
			id, err := policyID(src.Name, i, p)
			if err != nil {
				return nil, err
			}
			if prev, dup := seenID[id]; dup {
				return nil, fmt.Errorf("duplicate policy id %q in %s (first in %s)", id, src.Name, prev)
			}
			seenID[id] = src.Name
			all = append(all, namedPolicy{id: id, policy: p})
		}
	}
	return all, nil
}

// policyID is the @id annotation, else "<source name>:<index>".
func policyID(source string, index int, p *cedar.Policy) (cedar.PolicyID, error) {
	v, ok := p.Annotations()[idAnnotation]
	if !ok {
		return cedar.PolicyID(source + ":" + strconv.Itoa(index)), nil
	}
	if v == "" {
		return "", fmt.Errorf("%s: policy %d has an empty @id", source, index)
	}
	return cedar.PolicyID(v), nil
}

// forAction returns, in order, the policies whose action scope can match
// Action::"<action>". Skipping the others is exact: Cedar evaluates the
// scope before the conditions, so a policy whose action scope is false
// neither matches nor errors, and our Action entities have no parents.
func (l policyList) forAction(action string) policyList {
	uid := cedar.NewEntityUID(actionType, cedar.String(action))
	out := policyList{}
	for _, p := range l {
		if actionScopeMayMatch(p.policy.AST().Action, uid) {
			out = append(out, p)
		}
	}
	return out
}

// actionScopeMayMatch reports whether an action scope can be true for uid.
// Unknown scope kinds are kept (evaluated by Cedar), never dropped.
func actionScopeMayMatch(scope xast.IsActionScopeNode, uid cedar.EntityUID) bool {
	switch s := scope.(type) {
	case xast.ScopeTypeEq:
		return s.Entity == uid
	case xast.ScopeTypeIn:
		return s.Entity == uid
	case xast.ScopeTypeInSet:
		for _, e := range s.Entities {
			if e == uid {
				return true
			}
		}
		return false
	default:
		return true
	}
}
