package policy

import (
	"strings"

	cedar "github.com/cedar-policy/cedar-go"
)

// Cedar entity types of the entity model (see the package documentation).
const (
	principalType cedar.EntityType = "Principal"
	actionType    cedar.EntityType = "Action"
	toolType      cedar.EntityType = "Tool"
	toolGroupType cedar.EntityType = "ToolGroup"
	skillType     cedar.EntityType = "Skill"
	channelType   cedar.EntityType = "Channel"
	deviceType    cedar.EntityType = "Device"
)

// Request is one tool request to authorize.
type Request struct {
	Principal string // e.g. "alice"
	Tool      string // e.g. "echo", "process.run", "acme.hello"
	Skill     string // "" when the tool is not a skill
	// SkillVersion, SkillPublisher and SkillRequiresApproval describe the
	// installed skill (attributes of its Skill entity).
	SkillVersion          string
	SkillPublisher        string
	SkillRequiresApproval bool
	Channel               string // "" when unknown
	Device                string // "" when unknown
	Session               string // "" when unknown; always the caller's claim
	// ChannelBound and DeviceBound report that Channel and Device were set
	// by an administrator for the submitting login role (ledger.principals)
	// rather than claimed by the caller, who may send any value. Only a
	// bound value reaches Cedar as context.channel / context.device; every
	// value, bound or not, reaches it as context.claimed_channel /
	// context.claimed_device.
	ChannelBound bool
	DeviceBound  bool
	RunID        string   // "" when unknown
	Capabilities []string // e.g. "process_exec", "network", "secrets_read"
	Sensitive    bool
}

// toolGroup is the prefix of tool before its first dot, "" when it has none.
func toolGroup(tool string) string {
	group, _, found := strings.Cut(tool, ".")
	if !found {
		return ""
	}
	return group
}

func (r Request) principalUID() cedar.EntityUID {
	return cedar.NewEntityUID(principalType, cedar.String(r.Principal))
}

func (r Request) toolUID() cedar.EntityUID {
	return cedar.NewEntityUID(toolType, cedar.String(r.Tool))
}

func (r Request) skillUID() cedar.EntityUID {
	return cedar.NewEntityUID(skillType, cedar.String(r.Skill))
}

// context builds the context record. Every key is always present except
// channel and device, which are present only when bound (see the package
// documentation): a policy that reads them without `has` fails to
// evaluate for a caller whose value is only claimed, and so denies.
func (r Request) context() cedar.Record {
	caps := make([]cedar.Value, len(r.Capabilities))
	for i, c := range r.Capabilities {
		caps[i] = cedar.String(c)
	}
	m := cedar.RecordMap{
		"run_id":              cedar.String(r.RunID),
		"session_id":          cedar.String(r.Session),
		"claimed_channel":     cedar.String(r.Channel),
		"claimed_device":      cedar.String(r.Device),
		"channel_bound":       cedar.Boolean(r.ChannelBound),
		"device_bound":        cedar.Boolean(r.DeviceBound),
		"capabilities":        cedar.NewSet(caps...),
		"is_sensitive_action": cedar.Boolean(r.Sensitive),
		"tool_name":           cedar.String(r.Tool),
		"skill_id":            cedar.String(r.Skill),
	}
	if r.ChannelBound {
		m["channel"] = cedar.String(r.Channel)
	}
	if r.DeviceBound {
		m["device"] = cedar.String(r.Device)
	}
	return cedar.NewRecord(m)
}

// Origin is the channel and device part of the context record, with the
// same keys and values as Cedar gets them (channel and device only when
// bound), for the policy.decided record: an auditor sees both what the
// caller claimed and what was bound.
func (r Request) Origin() map[string]any {
	o := map[string]any{
		"claimed_channel": r.Channel,
		"claimed_device":  r.Device,
		"channel_bound":   r.ChannelBound,
		"device_bound":    r.DeviceBound,
	}
	if r.ChannelBound {
		o["channel"] = r.Channel
	}
	if r.DeviceBound {
		o["device"] = r.Device
	}
	return o
}
