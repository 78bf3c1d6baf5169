package procinput

import "strconv"

// gitHardening are configuration entries given to every git run through
// GIT_CONFIG_COUNT, which outranks the repository's own configuration:
// a workspace the model can write to must not be able to make git run
// hooks, an fsmonitor, a pager or an editor of its choosing.
var gitHardening = [][2]string{
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"protocol.ext.allow", "never"},
}

// buildEnv returns the child's whole environment. Nothing comes from the
// daemon's environment (Palyra's gap #3): PATH is the policy's, the
// locale is C, and HOME is the workspace root, so that tools writing
// ~/.cache, ~/.local (Python's user base) or ~/.config write into the
// workspace and never into the daemon user's home.
func buildEnv(p Policy, root, name string) []string {
	env := []string{"PATH=" + p.Path, "LANG=C", "LC_ALL=C", "HOME=" + root}
	if name != "git" {
		return env
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", // HOME is the workspace: ignore a planted ~/.gitconfig
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_COUNT="+strconv.Itoa(len(gitHardening)))
	for i, kv := range gitHardening {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}
