package procinput

// Reason codes carried in Error.Reason.
const (
	// Parse (invalid_input).
	ReasonInputMalformed             = "process.input_malformed"
	ReasonInputNotUTF8               = "process.input_not_utf8"
	ReasonInputTooLarge              = "process.input_too_large"
	ReasonUnknownField               = "process.unknown_field"
	ReasonDuplicateField             = "process.duplicate_field"
	ReasonNullElement                = "process.null_element"
	ReasonCwdConflict                = "process.cwd_conflict"
	ReasonCwdFlagMissingValue        = "process.cwd_flag_missing_value"
	ReasonBackgroundInvalid          = "process.background_invalid"
	ReasonBackgroundTimeoutAmbiguous = "process.background_timeout_ambiguous"

	// Shape (invalid_input).
	ReasonCommandEmpty         = "process.command_empty"
	ReasonCommandTooLong       = "process.command_too_long"
	ReasonCommandWhitespace    = "process.command_whitespace"
	ReasonCommandPathSeparator = "process.command_path_separator"
	ReasonTooManyArgs          = "process.too_many_args"
	ReasonArgTooLong           = "process.arg_too_long"
	ReasonArgNUL               = "process.arg_nul"
	ReasonTimeoutInvalid       = "process.timeout_invalid"
	ReasonLifetimeInvalid      = "process.lifetime_invalid"
	ReasonTooManyEgressHosts   = "process.too_many_egress_hosts"

	// Executable and launch forms.
	ReasonExecutableNotAllowlisted = "process.executable_not_allowlisted" // capability_denied
	ReasonInterpreterDenied        = "process.interpreter_denied"         // capability_denied
	ReasonEmbeddedCommandLine      = "process.embedded_command_line"      // invalid_input
	ReasonCmdDenied                = "process.cmd_denied"                 // invalid_input
	ReasonNameKillDenied           = "process.name_kill_denied"           // capability_denied
	ReasonGroupKillDenied          = "process.group_kill_denied"          // capability_denied
	ReasonLauncherDenied           = "process.launcher_denied"            // capability_denied
	ReasonDetachedDenied           = "process.detached_denied"            // capability_denied
	ReasonInterpreterEvalDenied    = "process.interpreter_eval_denied"    // capability_denied

	// Workspace (workspace_scope_denied).
	ReasonRootInvalid        = "workspace.root_invalid"
	ReasonNULByte            = "workspace.nul_byte"
	ReasonPathTraversal      = "workspace.path_traversal"
	ReasonPathEscape         = "workspace.path_escape"
	ReasonPathUnresolvable   = "workspace.path_unresolvable"
	ReasonCwdMissing         = "workspace.cwd_missing"
	ReasonCwdNotDirectory    = "workspace.cwd_not_directory"
	ReasonFileURLInvalid     = "workspace.file_url_invalid"
	ReasonEmbeddedPathEscape = "workspace.embedded_path_escape"

	// Egress.
	ReasonHostInvalid        = "egress.host_invalid"         // invalid_input
	ReasonURLInvalid         = "egress.url_invalid"          // invalid_input
	ReasonHostNotAllowlisted = "egress.host_not_allowlisted" // egress_denied
	ReasonHostNotRequested   = "egress.host_not_requested"   // egress_denied
)
