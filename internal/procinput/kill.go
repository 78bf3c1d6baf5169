package procinput

import (
	"fmt"
	"strconv"
	"strings"
)

// checkKillScope refuses terminating processes by name (pkill, killall,
// taskkill /IM, Stop-Process -Name, kill NAME) or by group (kill -1, kill 0,
// kill -PGID): they can reach processes the run does not own, the daemon
// included. Only PID-scoped kills pass.
func checkKillScope(cmd string, args []string) error {
	name := programName(cmd)
	switch name {
	case "pkill", "killall", "killall5", "skill", "snice":
		return nameKillDenied(cmd)
	case "taskkill":
		if taskkillByName(args) {
			return nameKillDenied(cmd + " /IM")
		}
	case "stop-process", "spps":
		if stopProcessByName(args) {
			return nameKillDenied(cmd + " -Name")
		}
	case "powershell", "pwsh":
		if powerShellKillsByName(args) {
			return nameKillDenied(cmd)
		}
	case "kill":
		return checkKillOperands(args)
	}
	return nil
}

func nameKillDenied(form string) *Error {
	return capabilityDenied(ReasonNameKillDenied, fmt.Sprintf(
		"%s terminates processes by name, which can reach processes this run does not own; stop a PID returned by this run instead", form))
}

func taskkillByName(args []string) bool {
	for i, a := range args {
		la := strings.ToLower(strings.TrimSpace(a))
		switch {
		case la == "/im" || la == "-im" || strings.HasPrefix(la, "/im:"):
			return true
		case (la == "/fi" || la == "-fi") && i+1 < len(args):
			f := strings.ToLower(args[i+1])
			if strings.Contains(f, "imagename") || strings.Contains(f, "windowtitle") {
				return true
			}
		}
	}
	return false
}

// stopProcessByName matches -Name and its PowerShell abbreviations and
// alias (-ProcessName).
func stopProcessByName(args []string) bool {
	for _, a := range args {
		la := strings.ToLower(strings.TrimSpace(a))
		if !strings.HasPrefix(la, "-") || len(la) < 2 {
			continue
		}
		p := strings.TrimRight(la[1:], ":")
		if strings.HasPrefix("name", p) || (len(p) >= 2 && strings.HasPrefix("processname", p)) {
			return true
		}
	}
	return false
}

func powerShellKillsByName(args []string) bool {
	joined := strings.ToLower(strings.Join(args, " "))
	stop := strings.Contains(joined, "stop-process") || strings.Contains(joined, "spps")
	return (strings.Contains(joined, "taskkill") && strings.Contains(joined, "/im")) ||
		(stop && (strings.Contains(joined, "-name") || strings.Contains(joined, "get-process")))
}

// checkKillOperands allows kill only with positive numeric PIDs.
func checkKillOperands(args []string) error {
	signal, operands := false, false
	for i := 0; i < len(args); i++ {
		a := strings.TrimSpace(args[i])
		switch {
		case operands || a == "" || a[0] != '-' || a == "-":
		case a == "--":
			operands = true
			continue
		case a == "-l" || a == "-L" || a == "--list" || a == "--table":
			return nil
		case a == "-s" || a == "-n" || a == "--signal":
			signal = true
			i++
			continue
		case !signal:
			signal = true // -9, -KILL, -SIGTERM
			continue
		}
		n, err := strconv.ParseInt(a, 10, 64)
		switch {
		case err != nil:
			return nameKillDenied("kill " + a)
		case n <= 0:
			return capabilityDenied(ReasonGroupKillDenied, fmt.Sprintf(
				"kill %s signals a process group or every process; stop a PID returned by this run instead", a))
		}
	}
	return nil
}
