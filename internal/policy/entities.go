package policy

import (
	cedar "github.com/cedar-policy/cedar-go"
)

// maxEntities is the number of entities one request can produce:
// Principal, Tool, ToolGroup, Skill, Channel, Device.
const maxEntities = 6

// requestEntities is the entity store for one request. It implements
// cedar.EntityGetter with a fixed array and a linear scan, which for six
// entities is cheaper than building a cedar.EntityMap on every call.
type requestEntities struct {
	n    int
	list [maxEntities]cedar.Entity
}

var _ cedar.EntityGetter = (*requestEntities)(nil)

// Get implements cedar.EntityGetter.
func (s *requestEntities) Get(uid cedar.EntityUID) (cedar.Entity, bool) {
	for i := range s.n {
		if s.list[i].UID == uid {
			return s.list[i], true
		}
	}
	return cedar.Entity{}, false
}

// add stores an entity; zero Records and sets are valid empty values and
// avoid allocations for entities without attributes or parents.
func (s *requestEntities) add(e cedar.Entity) {
	s.list[s.n] = e
	s.n++
}

// entities builds the entity store for r (see the package documentation).
func (r Request) entities() *requestEntities {
	s := &requestEntities{}
	s.add(cedar.Entity{UID: r.principalUID()})
	tool := cedar.Entity{
		UID: r.toolUID(),
		Attributes: cedar.NewRecord(cedar.RecordMap{
			"name":  cedar.String(r.Tool),
			"group": cedar.String(toolGroup(r.Tool)),
		}),
	}
	if group := toolGroup(r.Tool); group != "" {
		groupUID := cedar.NewEntityUID(toolGroupType, cedar.String(group))
		tool.Parents = cedar.NewEntityUIDSet(groupUID)
		s.add(cedar.Entity{UID: groupUID})
	}
	s.add(tool)
	if r.Skill != "" {
		s.add(cedar.Entity{UID: r.skillUID(), Attributes: cedar.NewRecord(cedar.RecordMap{
			"id":                cedar.String(r.Skill),
			"version":           cedar.String(r.SkillVersion),
			"publisher":         cedar.String(r.SkillPublisher),
			"requires_approval": cedar.Boolean(r.SkillRequiresApproval),
		})})
	}
	if r.ChannelBound && r.Channel != "" {
		s.add(cedar.Entity{UID: cedar.NewEntityUID(channelType, cedar.String(r.Channel))})
	}
	if r.DeviceBound && r.Device != "" {
		s.add(cedar.Entity{UID: cedar.NewEntityUID(deviceType, cedar.String(r.Device))})
	}
	return s
}
