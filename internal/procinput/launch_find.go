package procinput

import (
	"fmt"
	"strings"
)

// findActions are find's actions that run a command; the first two may
// end in "{} +" as well as ";".
var findActions = map[string]bool{"-exec": true, "-execdir": true, "-ok": true, "-okdir": true}

// findLaunch reads every -exec, -execdir, -ok and -okdir of find. An
// action word is read as one wherever it stands, even as the value of
// another test (-name -exec): find's own reading is then one of those
// checked.
func findLaunch(args []string) (launch, error) {
	var l launch
	for i, a := range args {
		if !findActions[a] {
			continue
		}
		cmd, err := findCommand(a, args[i+1:])
		if err != nil {
			return launch{}, err
		}
		if l.form == "" {
			l.form = "find " + a
		}
		l.commands = append(l.commands, cmd)
	}
	return l, nil
}

// findCommand returns an action's command: the words up to ";", or for
// -exec and -execdir up to "{}" followed by "+". A program that is itself
// "{}" is a found file, which cannot be checked.
func findCommand(action string, args []string) ([]string, error) {
	plus := action == "-exec" || action == "-execdir"
	for j, a := range args {
		if a != ";" && !(plus && a == "+" && j > 0 && args[j-1] == "{}") {
			continue
		}
		if j == 0 {
			return nil, fmt.Errorf("find %s has no command", action)
		}
		if strings.Contains(args[0], "{}") {
			return nil, fmt.Errorf("find %s runs the files it finds", action)
		}
		return args[:j], nil
	}
	return nil, fmt.Errorf("find %s lacks its terminating ';'", action)
}
