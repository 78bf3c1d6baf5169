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
// An engine is never changed: a [Watcher] loads a new one when the files
// change and hands it to the executor, which records it (policy.published)
// and authorizes the next claims with it. [Check] validates files as a
// person edits them, with line numbers; [Decision.Plain] says a decision
// in words; [Engine.Explain] says what each policy makes of a request.
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
//	Channel::"<channel>"       no attributes; only when the channel is bound
//	Device::"<device>"         no attributes; only when the device is bound
//
// Action entities have no parents, so `action in Action::"x"` holds only
// for action == Action::"x". The engine relies on this to pre-select, at
// load time, the policies whose action scope can match each action.
//
// The context record carries every key below, with "" or false or an
// empty set for unknown values, so reading one never errors:
//
//	run_id, session_id, tool_name, skill_id   String
//	claimed_channel, claimed_device           String
//	capabilities                              Set<String>
//	is_sensitive_action                       Bool
//	channel_bound, device_bound               Bool
//
// and, only when an administrator bound the value to the caller's login
// role (ledger.principals; Request.ChannelBound / DeviceBound):
//
//	channel, device                           String
//
// Safe by default: a caller may claim any channel or device, and a claim
// reaches Cedar only as claimed_channel / claimed_device (which hold the
// request's value whether bound or not). A policy that reads
// context.device where the device is only claimed reads a missing
// attribute, fails to evaluate, and so denies (see [ReasonEvaluationError]);
// `context has device && context.device == "x"` tests it without the error.
// session_id is always the caller's claim. [Request.Origin] returns the
// channel and device keys as Cedar gets them, for the record.
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
