package procinput

import (
	"fmt"
	"strings"
)

// makeLaunch: SHELL=, .SHELLFLAGS=, MAKESHELL=, MAKEFLAGS= on the command
// line, and --eval/-E, choose what make runs recipes with.
func makeLaunch(args []string) string {
	for _, a := range args {
		if longOption(a, "eval") != "" || a == "-E" || (strings.HasPrefix(a, "-E") && !strings.HasPrefix(a, "--")) {
			return "make --eval"
		}
		name, _, ok := strings.Cut(a, "=")
		if !ok || strings.HasPrefix(a, "-") {
			continue
		}
		switch strings.TrimSpace(strings.TrimRight(name, ":+?!")) {
		case "SHELL", ".SHELLFLAGS", "MAKESHELL", "COMSPEC", "MAKEFLAGS", "GNUMAKEFLAGS", "MFLAGS":
			return "make " + name + "="
		}
	}
	return ""
}

// tarLaunch: --to-command, --use-compress-program (-I), --checkpoint-action,
// --info-script (-F), --new-volume-script, --rsh-command, --rmt-command;
// including the old-style first argument ("xIf").
func tarLaunch(args []string) string {
	for i, a := range args {
		if l := longOption(a, "to-command", "use-compress-program", "checkpoint-action",
			"info-script", "new-volume-script", "rsh-command", "rmt-command"); l != "" {
			return "tar --" + l
		}
		if i == 0 && !strings.HasPrefix(a, "-") {
			a = "-" + a
		}
		if c := shortOption(a, "IF"); c != 0 {
			return fmt.Sprintf("tar -%c", c)
		}
	}
	return ""
}

func zipLaunch(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-TT") || longOption(a, "unzip-command") != "" {
			return "zip -TT"
		}
	}
	return ""
}

// sshLaunch: options that run a local command, and -F (a config file can
// set them).
func sshLaunch(args []string) string {
	for _, a := range args {
		la := strings.ToLower(a)
		for _, opt := range []string{"proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand"} {
			if strings.Contains(la, opt) {
				return "ssh -o " + opt
			}
		}
		if strings.HasPrefix(a, "-F") {
			return "ssh -F"
		}
	}
	return ""
}
