package procinput

import "strings"

// gitSafeConfig are the configuration keys git -c and git config may set:
// none of them names a program. Anything else (core.pager, core.editor,
// core.sshCommand, core.fsmonitor, core.hooksPath, alias.*, diff.external,
// filter.*, credential.helper, ...) may run one.
var gitSafeConfig = map[string]bool{
	"user.name": true, "user.email": true, "user.useconfigonly": true,
	"core.quotepath": true, "core.autocrlf": true, "core.safecrlf": true, "core.eol": true,
	"core.ignorecase": true, "core.filemode": true, "core.abbrev": true,
	"init.defaultbranch": true, "diff.renames": true, "diff.algorithm": true, "diff.noprefix": true,
	"diff.mnemonicprefix": true, "diff.context": true, "diff.colormoved": true,
	"merge.conflictstyle": true, "pull.rebase": true, "pull.ff": true, "push.default": true,
	"fetch.prune": true, "status.showuntrackedfiles": true, "log.date": true, "log.decorate": true,
	"column.ui": true, "i18n.commitencoding": true, "i18n.logoutputencoding": true,
	"tag.sort": true, "branch.sort": true, "gc.auto": true, "maintenance.auto": true,
}

func gitKeySafe(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	return gitSafeConfig[k] || strings.HasPrefix(k, "color.") || strings.HasPrefix(k, "advice.")
}

// gitGlobalWithValue are global options whose value is the next argument.
var gitGlobalWithValue = map[string]bool{
	"-C": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
	"--super-prefix": true, "--attr-source": true, "--list-cmds": true, "--config-env": true,
}

// gitLaunch finds git's launch forms: unsafe -c/--config-env keys,
// --exec-path=DIR, the ext:: transport, and subcommands or options that
// run programs (difftool, mergetool, filter-branch, bisect run, submodule
// foreach, rebase --exec, grep -O, --upload-pack, --receive-pack, config
// writes of unsafe keys or --edit).
func gitLaunch(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(strings.ToLower(a), "ext::") {
			return "git ext:: transport"
		}
	}
	i, form := gitGlobals(args)
	if form != "" || i >= len(args) {
		return form
	}
	return gitSubcommand(args[i], args[i+1:])
}

// gitGlobals checks the options before the subcommand and returns the
// subcommand's index.
func gitGlobals(args []string) (int, string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !strings.HasPrefix(a, "-"):
			return i, ""
		case a == "-c" || a == "--config-env":
			if i+1 < len(args) && !gitKeySafe(gitKey(args[i+1])) {
				return i, "git " + a + " " + gitKey(args[i+1])
			}
			i++
		case strings.HasPrefix(a, "-c"):
			if !gitKeySafe(gitKey(a[2:])) {
				return i, "git -c " + gitKey(a[2:])
			}
		case strings.HasPrefix(a, "--config-env="):
			if k := gitKey(strings.TrimPrefix(a, "--config-env=")); !gitKeySafe(k) {
				return i, "git --config-env " + k
			}
		case strings.HasPrefix(a, "--exec-path="):
			return i, "git --exec-path="
		case gitGlobalWithValue[a]:
			i++
		}
	}
	return len(args), ""
}

func gitKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k
}

func gitSubcommand(sub string, rest []string) string {
	switch sub {
	case "difftool", "mergetool", "filter-branch", "instaweb", "web--browse", "daemon", "send-email":
		return "git " + sub
	case "bisect":
		return gitIfAny(sub, rest, "run")
	case "submodule":
		return gitIfAny(sub, rest, "foreach")
	case "rebase":
		if f := optionLaunch("git rebase", "x", "exec")(rest); f != "" {
			return f
		}
	case "grep":
		if f := optionLaunch("git grep", "O", "open-files-in-pager")(rest); f != "" {
			return f
		}
	case "config":
		return gitConfigLaunch(rest)
	case "clone":
		for _, a := range rest {
			if a == "-u" || strings.HasPrefix(a, "-u") && !strings.HasPrefix(a, "--") {
				return "git clone -u"
			}
		}
	case "help":
		return optionLaunch("git help", "wi", "web", "info")(rest)
	}
	return optionLaunch("git "+sub, "", "upload-pack", "receive-pack", "exec")(rest)
}

func gitIfAny(sub string, rest []string, word string) string {
	for _, a := range rest {
		if a == word {
			return "git " + sub + " " + word
		}
	}
	return ""
}

// gitConfigLaunch refuses --edit and writes of unsafe keys, in both the
// old (git config KEY VALUE) and new (git config set KEY VALUE) syntax.
func gitConfigLaunch(rest []string) string {
	var operands []string
	write := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-e" || longOption(a, "edit") != "":
			return "git config --edit"
		case longOption(a, "add", "replace-all") != "":
			write = true
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment" || a == "--value":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) > 0 && operands[0] == "edit" {
		return "git config edit"
	}
	if len(operands) > 0 && operands[0] == "set" {
		operands, write = operands[1:], true
	}
	if len(operands) >= 2 {
		write = true
	}
	if write && len(operands) > 0 && !gitKeySafe(operands[0]) {
		return "git config " + operands[0]
	}
	return ""
}
