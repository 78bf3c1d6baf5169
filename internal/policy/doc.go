// Package policy evaluates Cedar policies for tool requests.
//
// Every tool request is authorized before it runs. The [Engine] is loaded
// once from Cedar policy files, is immutable afterwards and is safe for
// concurrent use. [Engine.Authorize] fails closed: any evaluation error
// denies, even when a permit matched, and the [Decision] carries the reason
// code, the determining policy ids, every diagnostic error, the policy-set
// digest and the action that decided, so it can be recorded verbatim in a
// policy.decided event.
//
// # Entity model
//
// A request is evaluated as
//
//	principal: Principal::"<Request.Principal>"
//	action:    Action::"tool.execute"
//	resource:  Tool::"<Request.Tool>"
//
// and, when Request.Skill is set, additionally as a second check
//
//	action:    Action::"skill.execute"
//	resource:  Skill::"<Request.Skill>"
//
// A skill request is allowed only when both checks allow; Decision.Action
// names the check that denied (or "skill.execute" when both allowed).
//
// Entities passed to Cedar (built per call from the request):
//
//	Principal::"<principal>"   no attributes
//	Tool::"<tool>"             attributes name (String), group (String, "" when none);
//	                           parent ToolGroup::"<prefix before the first dot>" when the name has a dot
//	ToolGroup::"<prefix>"      no attributes
//	Skill::"<skill>"           attributes id, version, publisher (String), requires_approval (Bool);
//	                           only when Request.Skill != ""
//	Channel::"<channel>"       no attributes; only when Request.Channel != ""
//	Device::"<device>"         no attributes; only when Request.Device != ""
//
// Action entities have no parents, so `action in Action::"x"` holds only
// for action == Action::"x". The engine relies on this to pre-select, at
// load time, the policies whose action scope can match each action.
//
// The context record always carries every key, with "" or false or an
// empty set for unknown values, so reading a context attribute never errors:
//
//	run_id, session_id, channel, device, tool_name, skill_id  String
//	capabilities                                              Set<String>
//	is_sensitive_action, channel_bound, device_bound          Bool
//
// channel, device and session_id are what the caller sent, unless
// channel_bound / device_bound say an administrator bound that value to
// the caller's login role: only then may a policy trust them.
//
// # Policy ids
//
// A policy's id is its @id("...") annotation, else "<source name>:<index>"
// with the 0-based index of the policy within its source. Ids must be unique
// across the set; [Load] uses the file's base name as the source name.
//
// # Reason codes
//
// See [ReasonAllow], [ReasonDeny], [ReasonBaselineDeny] and
// [ReasonEvaluationError].
package policy
