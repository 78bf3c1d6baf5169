package procinput

import "testing"

func TestCheckLaunchForms(t *testing.T) {
	ws := newTestWorkspace(t)
	interpreters := func(p *Policy) { p.AllowInterpreters = true }
	type a = []string
	cases := []checkCase{
		// env
		{name: "env alone prints the environment", in: Input{Command: "env"}},
		{name: "env with assignments only", in: Input{Command: "env", Args: a{"-i", "A=1", "B=2"}}},
		{name: "env -u NAME", in: Input{Command: "env", Args: a{"-u", "HOME"}}},
		{name: "env runs sh", in: Input{Command: "env", Args: a{"sh", "-c", "id"}}, want: ReasonLauncherDenied},
		{name: "env A=1 runs a program", in: Input{Command: "env", Args: a{"A=1", "ls"}}, want: ReasonLauncherDenied},
		{name: "env -i runs a program", in: Input{Command: "env", Args: a{"-i", "ls"}}, want: ReasonLauncherDenied},
		{name: "env -S", in: Input{Command: "env", Args: a{"-S", "sh -c id"}}, want: ReasonLauncherDenied},
		{name: "env --split-string abbreviated", in: Input{Command: "env", Args: a{"--split=sh -c id"}}, want: ReasonLauncherDenied},
		{name: "env -- program", in: Input{Command: "env", Args: a{"--", "ls"}}, want: ReasonLauncherDenied},
		{name: "env -u value is not a program", in: Input{Command: "env", Args: a{"-u", "ls"}}},
		{name: "env with an unknown option cannot be read", in: Input{Command: "env", Args: a{"--bogus"}}, want: ReasonLauncherDenied},
		{name: "env -S splitting to nothing", in: Input{Command: "env", Args: a{"-S", "# nothing"}}},
		{name: "env launch allowed with interpreters", in: Input{Command: "env", Args: a{"ls"}}, policy: interpreters},
		// xargs, find
		{name: "xargs", in: Input{Command: "xargs", Args: a{"sh", "-c", "id"}}, want: ReasonLauncherDenied},
		{name: "find -name passes", in: Input{Command: "find", Args: a{".", "-name", "*.go"}}},
		{name: "find -exec", in: Input{Command: "find", Args: a{".", "-exec", "sh", "-c", "id", ";"}}, want: ReasonLauncherDenied},
		{name: "find -execdir", in: Input{Command: "find", Args: a{".", "-execdir", "id", ";"}}, want: ReasonLauncherDenied},
		{name: "find -ok", in: Input{Command: "find", Args: a{".", "-ok", "id", ";"}}, want: ReasonLauncherDenied},
		// git
		{name: "git status passes", in: Input{Command: "git", Args: a{"status"}}},
		{name: "git -c user.name passes", in: Input{Command: "git", Args: a{"-c", "user.name=x", "commit", "-m", "m"}}},
		{name: "git -c color.ui passes", in: Input{Command: "git", Args: a{"-c", "color.ui=never", "log"}}},
		{name: "git -c core.pager", in: Input{Command: "git", Args: a{"-c", "core.pager=sh -c id", "log"}}, want: ReasonLauncherDenied},
		{name: "git -c core.sshCommand", in: Input{Command: "git", Args: a{"-c", "core.sshCommand=id", "fetch"}}, want: ReasonLauncherDenied},
		{name: "git -c alias", in: Input{Command: "git", Args: a{"-c", "alias.x=!id", "x"}}, want: ReasonLauncherDenied},
		{name: "git -ccore.fsmonitor attached", in: Input{Command: "git", Args: a{"-ccore.fsmonitor=id", "status"}}, want: ReasonLauncherDenied},
		{name: "git --config-env", in: Input{Command: "git", Args: a{"--config-env=core.editor=E", "commit"}}, want: ReasonLauncherDenied},
		{name: "git --exec-path=", in: Input{Command: "git", Args: a{"--exec-path=.", "status"}}, want: ReasonLauncherDenied},
		{name: "git --exec-path prints", in: Input{Command: "git", Args: a{"--exec-path"}}},
		{name: "git difftool", in: Input{Command: "git", Args: a{"difftool"}}, want: ReasonLauncherDenied},
		{name: "git rebase --exec", in: Input{Command: "git", Args: a{"rebase", "--exec", "id", "main"}}, want: ReasonLauncherDenied},
		{name: "git rebase -x", in: Input{Command: "git", Args: a{"rebase", "-x", "id", "main"}}, want: ReasonLauncherDenied},
		{name: "git rebase passes", in: Input{Command: "git", Args: a{"rebase", "main"}}},
		{name: "git bisect run", in: Input{Command: "git", Args: a{"bisect", "run", "id"}}, want: ReasonLauncherDenied},
		{name: "git submodule foreach", in: Input{Command: "git", Args: a{"submodule", "foreach", "id"}}, want: ReasonLauncherDenied},
		{name: "git grep -O", in: Input{Command: "git", Args: a{"grep", "-Oid", "x"}}, want: ReasonLauncherDenied},
		{name: "git fetch --upload-pack", in: Input{Command: "git", Args: a{"fetch", "--upload-pack=id", "origin"}}, want: ReasonLauncherDenied},
		{name: "git clone -u", in: Input{Command: "git", Args: a{"clone", "-u", "id", "x"}}, want: ReasonLauncherDenied},
		{name: "git ext:: transport", in: Input{Command: "git", Args: a{"clone", "ext::sh -c id", "x"}}, want: ReasonLauncherDenied},
		{name: "git config core.pager write", in: Input{Command: "git", Args: a{"config", "core.pager", "id"}}, want: ReasonLauncherDenied},
		{name: "git config set core.editor", in: Input{Command: "git", Args: a{"config", "set", "core.editor", "id"}}, want: ReasonLauncherDenied},
		{name: "git config --edit", in: Input{Command: "git", Args: a{"config", "--edit"}}, want: ReasonLauncherDenied},
		{name: "git config read passes", in: Input{Command: "git", Args: a{"config", "--get", "core.pager"}}},
		{name: "git config user.email write passes", in: Input{Command: "git", Args: a{"config", "user.email", "a@b.c"}}},
		// make
		{name: "make passes", in: Input{Command: "make", Args: a{"-j2", "all", "DEBUG=1"}}},
		{name: "make SHELL=", in: Input{Command: "make", Args: a{"SHELL=/bin/sh"}}, want: ReasonLauncherDenied},
		{name: "make SHELL:=", in: Input{Command: "make", Args: a{"SHELL:=x"}}, want: ReasonLauncherDenied},
		{name: "make .SHELLFLAGS=", in: Input{Command: "make", Args: a{".SHELLFLAGS=-c"}}, want: ReasonLauncherDenied},
		{name: "make --eval", in: Input{Command: "make", Args: a{"--eval=x:;id"}}, want: ReasonLauncherDenied},
		{name: "make -E", in: Input{Command: "make", Args: a{"-E", "x:;id"}}, want: ReasonLauncherDenied},
		// sed, awk
		{name: "sed without --sandbox", in: Input{Command: "sed", Args: a{"-n", "1e id", "file.txt"}}, want: ReasonLauncherDenied},
		{name: "sed --sandbox passes", in: Input{Command: "sed", Args: a{"--sandbox", "-n", "1p", "file.txt"}}},
		{name: "awk without --sandbox", in: Input{Command: "awk", Args: a{"BEGIN{system(\"id\")}"}}, want: ReasonLauncherDenied},
		{name: "gawk --sandbox passes", in: Input{Command: "gawk", Args: a{"--sandbox", "{print}", "file.txt"}}},
		{name: "mawk always", in: Input{Command: "mawk", Args: a{"{print}"}}, want: ReasonLauncherDenied},
		// tar, rsync, others
		{name: "tar xf passes", in: Input{Command: "tar", Args: a{"-xzf", "a.tgz"}}},
		{name: "tar --to-command", in: Input{Command: "tar", Args: a{"-xf", "a.tar", "--to-command=id"}}, want: ReasonLauncherDenied},
		{name: "tar --to-com abbreviated", in: Input{Command: "tar", Args: a{"-xf", "a.tar", "--to-com=id"}}, want: ReasonLauncherDenied},
		{name: "tar -I", in: Input{Command: "tar", Args: a{"-I", "id", "-xf", "a.tar"}}, want: ReasonLauncherDenied},
		{name: "tar old style xIf", in: Input{Command: "tar", Args: a{"xIf", "id", "a.tar"}}, want: ReasonLauncherDenied},
		{name: "rsync -avz passes", in: Input{Command: "rsync", Args: a{"-avz", "sub", "sub2"}}},
		{name: "rsync -e", in: Input{Command: "rsync", Args: a{"-avze", "id", "sub", "sub2"}}, want: ReasonLauncherDenied},
		{name: "ssh ProxyCommand", in: Input{Command: "ssh", Args: a{"-o", "ProxyCommand=id", "example.com"}}, want: ReasonLauncherDenied},
		{name: "ssh -F", in: Input{Command: "ssh", Args: a{"-Fcfg", "example.com"}}, want: ReasonLauncherDenied},
		{name: "ssh plain passes", in: Input{Command: "ssh", Args: a{"example.com", "uptime"}}},
		{name: "sort --compress-program", in: Input{Command: "sort", Args: a{"--compress-program=id", "file.txt"}}, want: ReasonLauncherDenied},
		{name: "sort passes", in: Input{Command: "sort", Args: a{"-u", "file.txt"}}},
		{name: "wrapper timeout", in: Input{Command: "timeout", Args: a{"5", "sh"}}, want: ReasonLauncherDenied},
		{name: "wrapper nice", in: Input{Command: "nice", Args: a{"ls"}}, want: ReasonLauncherDenied},
		{name: "wrapper vim", in: Input{Command: "vim", Args: a{"-c", "!id"}}, want: ReasonLauncherDenied},
		{name: "wrapper allowed with interpreters", in: Input{Command: "timeout", Args: a{"5", "ls"}}, policy: interpreters},
	}
	runCheckCases(t, ws, cases)
}

// TestCheckLaunchersLookThrough: with AllowInterpreters, the program a
// launcher starts meets the command rules (eval flags, cmd, embedded
// command lines, kills, embedded paths, launch forms), recursively.
func TestCheckLaunchersLookThrough(t *testing.T) {
	ws := newTestWorkspace(t)
	type a = []string
	eval, launcher := ReasonInterpreterEvalDenied, ReasonLauncherDenied
	cases := []checkCase{
		// find
		{name: "find -exec sh -c", in: Input{Command: "find", Args: a{".", "-exec", "sh", "-c", "id", ";"}}, want: eval},
		{name: "find -execdir sh -c", in: Input{Command: "find", Args: a{".", "-execdir", "sh", "-c", "id", ";"}}, want: eval},
		{name: "find -exec python3 -c", in: Input{Command: "find", Args: a{".", "-exec", "python3", "-c", "print(1)", ";"}}, want: eval},
		{name: "find -exec sh -c ... {} +", in: Input{Command: "find", Args: a{".", "-exec", "sh", "-c", "id", "{}", "+"}}, want: eval},
		{name: "find -ok sh -c", in: Input{Command: "find", Args: a{".", "-ok", "sh", "-c", "id", ";"}}, want: eval},
		{name: "find -okdir sh -c", in: Input{Command: "find", Args: a{".", "-okdir", "sh", "-c", "id", ";"}}, want: eval},
		{name: "find second -exec", in: Input{Command: "find", Args: a{".", "-exec", "cat", "{}", ";", "-exec", "sh", "-c", "id", ";"}}, want: eval},
		{name: "find -exec word as a value", in: Input{Command: "find", Args: a{".", "-name", "-exec", "-o", "-exec", "sh", "-c", "id", ";"}}, want: eval},
		{name: "find -ok does not end at +", in: Input{Command: "find", Args: a{".", "-ok", "sh", "{}", "+", "-c", "id", ";"}}, want: eval},
		{name: "find -exec /bin/sh by path", in: Input{Command: "find", Args: a{".", "-exec", "/bin/sh", "-c", "id", ";"}}, want: eval},
		// env
		{name: "env sh -c", in: Input{Command: "env", Args: a{"sh", "-c", "id"}}, want: eval},
		{name: "env bash -lc", in: Input{Command: "env", Args: a{"bash", "-lc", "id"}}, want: eval},
		{name: "env -S", in: Input{Command: "env", Args: a{"-S", "sh -c id"}}, want: eval},
		{name: "env -S attached", in: Input{Command: "env", Args: a{"-Ssh -c id"}}, want: eval},
		{name: "env -iS cluster", in: Input{Command: "env", Args: a{"-iS", "sh -c id"}}, want: eval},
		{name: "env --split-string=", in: Input{Command: "env", Args: a{"--split-string=sh -c id"}}, want: eval},
		{name: "env --split abbreviated", in: Input{Command: "env", Args: a{"--split", "sh -c id"}}, want: eval},
		{name: "env -S with options inside", in: Input{Command: "env", Args: a{"-S", "-i FOO=1 sh -c id"}}, want: eval},
		{name: "env -S program, rest after", in: Input{Command: "env", Args: a{"-S", "sh", "-c", "id"}}, want: eval},
		{name: "env -S quoted and escaped", in: Input{Command: "env", Args: a{"-S", `"sh"\_'-c' id # comment`}}, want: eval},
		{name: "env -S inside -S", in: Input{Command: "env", Args: a{"-S", `-S 'sh -c id'`}}, want: eval},
		{name: "env -u NAME -C DIR", in: Input{Command: "env", Args: a{"-u", "HOME", "-C", "sub", "sh", "-c", "id"}}, want: eval},
		{name: "env - NAME=VALUE", in: Input{Command: "env", Args: a{"-", "FOO=1", "sh", "-c", "id"}}, want: eval},
		{name: "env --", in: Input{Command: "env", Args: a{"--", "sh", "-c", "id"}}, want: eval},
		{name: "env node --eval", in: Input{Command: "env", Args: a{"node", "--eval", "1"}}, want: eval},
		{name: "env pwsh -Com", in: Input{Command: "env", Args: a{"pwsh", "-Com", "id"}}, want: eval},
		{name: "env deno eval", in: Input{Command: "env", Args: a{"deno", "eval", "1"}}, want: eval},
		{name: "env python3.11 -Ic", in: Input{Command: "env", Args: a{"python3.11", "-Ic", "1"}}, want: eval},
		// xargs
		{name: "xargs sh -c", in: Input{Command: "xargs", Args: a{"sh", "-c", "id"}}, want: eval},
		{name: "xargs -a FILE sh -c", in: Input{Command: "xargs", Args: a{"-a", "file.txt", "sh", "-c", "id"}}, want: eval},
		{name: "xargs -I{} sh -c", in: Input{Command: "xargs", Args: a{"-I{}", "sh", "-c", "{}"}}, want: eval},
		{name: "xargs -0 -n 1 sh -c", in: Input{Command: "xargs", Args: a{"-0", "-n", "1", "sh", "-c", "id"}}, want: eval},
		{name: "xargs --max-args=1 sh -c", in: Input{Command: "xargs", Args: a{"--max-args=1", "sh", "-c", "id"}}, want: eval},
		{name: "xargs -i sh -c", in: Input{Command: "xargs", Args: a{"-i", "sh", "-c", "{}"}}, want: eval},
		// wrappers
		{name: "timeout sh -c", in: Input{Command: "timeout", Args: a{"5", "sh", "-c", "id"}}, want: eval},
		{name: "timeout -k -s sh -c", in: Input{Command: "timeout", Args: a{"-k", "1", "-s", "KILL", "5s", "sh", "-c", "id"}}, want: eval},
		{name: "timeout --signal= -- sh -c", in: Input{Command: "timeout", Args: a{"--signal=TERM", "--", "0.5", "sh", "-c", "id"}}, want: eval},
		{name: "nohup sh -c", in: Input{Command: "nohup", Args: a{"sh", "-c", "id"}}, want: eval},
		{name: "nohup -- sh -c", in: Input{Command: "nohup", Args: a{"--", "sh", "-c", "id"}}, want: eval},
		{name: "setsid -w sh -c", in: Input{Command: "setsid", Args: a{"-w", "sh", "-c", "id"}}, want: eval},
		{name: "setsid -fw sh -c", in: Input{Command: "setsid", Args: a{"-fw", "sh", "-c", "id"}}, want: eval},
		{name: "setsid --wait sh -c", in: Input{Command: "setsid", Args: a{"--wait", "sh", "-c", "id"}}, want: eval},
		{name: "nice -n sh -c", in: Input{Command: "nice", Args: a{"-n", "5", "sh", "-c", "id"}}, want: eval},
		{name: "nice -5 sh -c", in: Input{Command: "nice", Args: a{"-5", "sh", "-c", "id"}}, want: eval},
		{name: "nice --adj= sh -c", in: Input{Command: "nice", Args: a{"--adj=5", "sh", "-c", "id"}}, want: eval},
		{name: "stdbuf -oL sh -c", in: Input{Command: "stdbuf", Args: a{"-oL", "sh", "-c", "id"}}, want: eval},
		{name: "stdbuf -o L sh -c", in: Input{Command: "stdbuf", Args: a{"-o", "L", "sh", "-c", "id"}}, want: eval},
		{name: "ionice -c3 sh -c", in: Input{Command: "ionice", Args: a{"-c3", "sh", "-c", "id"}}, want: eval},
		{name: "chrt -o 0 sh -c", in: Input{Command: "chrt", Args: a{"-o", "0", "sh", "-c", "id"}}, want: eval},
		{name: "taskset MASK sh -c", in: Input{Command: "taskset", Args: a{"1", "sh", "-c", "id"}}, want: eval},
		{name: "taskset -c LIST sh -c", in: Input{Command: "taskset", Args: a{"-c", "0", "sh", "-c", "id"}}, want: eval},
		{name: "flock FILE sh -c", in: Input{Command: "flock", Args: a{"file.txt", "sh", "-c", "id"}}, want: eval},
		{name: "flock FILE -c", in: Input{Command: "flock", Args: a{"file.txt", "-c", "id"}}, want: eval},
		{name: "flock -w FILE sh -c", in: Input{Command: "flock", Args: a{"-w", "1", "--nb", "file.txt", "sh", "-c", "id"}}, want: eval},
		{name: "time sh -c", in: Input{Command: "time", Args: a{"-f", "%e", "sh", "-c", "id"}}, want: eval},
		// nested
		{name: "env timeout env sh -c", in: Input{Command: "env", Args: a{"timeout", "5", "env", "sh", "-c", "id"}}, want: eval},
		{name: "timeout nice xargs sh -c", in: Input{Command: "timeout", Args: a{"5", "nice", "-n", "1", "xargs", "sh", "-c", "id"}}, want: eval},
		{name: "find -exec env sh -c", in: Input{Command: "find", Args: a{".", "-exec", "env", "sh", "-c", "id", ";"}}, want: eval},
		{name: "env -S timeout sh -c", in: Input{Command: "env", Args: a{"-S", "timeout 5 sh -c id"}}, want: eval},
		{name: "setsid find -exec", in: Input{Command: "setsid", Args: a{"find", ".", "-exec", "sh", "-c", "id", ";"}}, want: eval},
		// the other command rules
		{name: "env node -e embedded path", in: Input{Command: "env", Args: a{"node", "-e", "require('fs').readFileSync('/etc/passwd')"}},
			want: ReasonEmbeddedPathEscape},
		{name: "timeout pkill", in: Input{Command: "timeout", Args: a{"5", "pkill", "sleep"}}, want: ReasonNameKillDenied},
		{name: "env kill -1", in: Input{Command: "env", Args: a{"kill", "-9", "-1"}}, want: ReasonGroupKillDenied},
		{name: "env cmd", in: Input{Command: "env", Args: a{"cmd", "/c", "dir"}}, want: ReasonCmdDenied},
		{name: "env whole command line", in: Input{Command: "env", Args: a{"node", "node -e 1"}}, want: ReasonEmbeddedCommandLine},
		// forms whose command cannot be read
		{name: "find -exec of found files", in: Input{Command: "find", Args: a{".", "-name", "python3", "-exec", "{}", "-c", "1", ";"}}, want: launcher},
		{name: "find -exec without ;", in: Input{Command: "find", Args: a{".", "-exec", "sh", "-c", "id"}}, want: launcher},
		{name: "xargs program from input", in: Input{Command: "xargs", Args: a{"-I", "P", "P", "-c", "id"}}, want: launcher},
		{name: "timeout unknown option", in: Input{Command: "timeout", Args: a{"--bogus", "5", "ls"}}, want: launcher},
		{name: "timeout hex duration", in: Input{Command: "timeout", Args: a{"0x5", "ls"}}, want: launcher},
		{name: "setsid unknown option", in: Input{Command: "setsid", Args: a{"-x", "ls"}}, want: launcher},
		{name: "nice -n without value", in: Input{Command: "nice", Args: a{"-n"}}, want: launcher},
		{name: "chrt without priority", in: Input{Command: "chrt", Args: a{"--other", "sh", "-c", "id"}}, want: launcher},
		{name: "flock -c with two words", in: Input{Command: "flock", Args: a{"file.txt", "-c", "id", "x"}}, want: launcher},
		{name: "env unknown option", in: Input{Command: "env", Args: a{"--bogus", "ls"}}, want: launcher},
		{name: "env -S ${NAME}", in: Input{Command: "env", Args: a{"-S", "${SHELL} -c id"}}, want: launcher},
		{name: "env -S unterminated quote", in: Input{Command: "env", Args: a{"-S", "sh '-c id"}}, want: launcher},
		{name: "env -S unknown escape", in: Input{Command: "env", Args: a{"-S", `sh \q`}}, want: launcher},
		{name: "git -c core.pager", in: Input{Command: "git", Args: a{"-c", "core.pager=sh -c id", "log"}}, want: launcher},
		{name: "git rebase --exec", in: Input{Command: "git", Args: a{"rebase", "--exec", "id", "main"}}, want: launcher},
		{name: "tar --to-command", in: Input{Command: "tar", Args: a{"-xf", "a.tar", "--to-command=sh -c id"}}, want: launcher},
		{name: "make SHELL=", in: Input{Command: "make", Args: a{"SHELL=/bin/sh"}}, want: launcher},
		{name: "strace", in: Input{Command: "strace", Args: a{"-f", "sh", "-c", "id"}}, want: launcher},
		{name: "watch", in: Input{Command: "watch", Args: a{"id"}}, want: launcher},
		{name: "env strace", in: Input{Command: "env", Args: a{"strace", "ls"}}, want: launcher},
		{name: "nine launchers deep", in: Input{Command: "env", Args: a{"env", "env", "env", "env", "env", "env", "env", "env", "ls"}}, want: launcher},
		// what stays allowed
		{name: "eight launchers deep", in: Input{Command: "env", Args: a{"env", "env", "env", "env", "env", "env", "env", "ls"}}},
		{name: "timeout 5 ls", in: Input{Command: "timeout", Args: a{"5", "ls"}}},
		{name: "timeout -k 1 0.5 ls -l", in: Input{Command: "timeout", Args: a{"-k", "1", "0.5", "ls", "-l"}}},
		{name: "timeout without a command", in: Input{Command: "timeout", Args: a{"5"}}},
		{name: "env FOO=1 ls", in: Input{Command: "env", Args: a{"FOO=1", "ls"}}},
		{name: "env -i -u HOME ls", in: Input{Command: "env", Args: a{"-i", "-u", "HOME", "ls"}}},
		{name: "env -S ls -l", in: Input{Command: "env", Args: a{"-S", "FOO=1 ls -l"}}},
		{name: "env alone", in: Input{Command: "env"}},
		{name: "find -exec cat", in: Input{Command: "find", Args: a{".", "-name", "x", "-exec", "cat", "{}", ";"}}},
		{name: "find -exec grep +", in: Input{Command: "find", Args: a{".", "-exec", "grep", "-l", "x", "{}", "+"}}},
		{name: "find -exec sh script", in: Input{Command: "find", Args: a{".", "-name", "x.sh", "-exec", "sh", "{}", ";"}}},
		{name: "xargs -a FILE cat", in: Input{Command: "xargs", Args: a{"-a", "file.txt", "cat"}}},
		{name: "xargs -a FILE sh", in: Input{Command: "xargs", Args: a{"-a", "file.txt", "sh"}}},
		{name: "xargs alone runs echo", in: Input{Command: "xargs"}},
		{name: "xargs -I{} cp", in: Input{Command: "xargs", Args: a{"-I{}", "cp", "{}", "sub"}}},
		{name: "nohup ls", in: Input{Command: "nohup", Args: a{"ls"}}},
		{name: "setsid -w ls", in: Input{Command: "setsid", Args: a{"-w", "ls"}}},
		{name: "nice ls", in: Input{Command: "nice", Args: a{"ls"}}},
		{name: "nice -n 5 ls", in: Input{Command: "nice", Args: a{"-n", "5", "ls"}}},
		{name: "stdbuf -oL ls", in: Input{Command: "stdbuf", Args: a{"-oL", "ls"}}},
		{name: "ionice -c3 ls", in: Input{Command: "ionice", Args: a{"-c3", "ls"}}},
		{name: "ionice -p PID", in: Input{Command: "ionice", Args: a{"-p", "1"}}},
		{name: "chrt -o 0 ls", in: Input{Command: "chrt", Args: a{"-o", "0", "ls"}}},
		{name: "taskset 1 ls", in: Input{Command: "taskset", Args: a{"1", "ls"}}},
		{name: "taskset -p PID", in: Input{Command: "taskset", Args: a{"-p", "1"}}},
		{name: "flock FILE ls", in: Input{Command: "flock", Args: a{"file.txt", "ls"}}},
		{name: "time ls", in: Input{Command: "time", Args: a{"ls"}}},
		{name: "env sh script", in: Input{Command: "env", Args: a{"sh", "sub/x.sh"}}},
		{name: "timeout python3 script -c", in: Input{Command: "timeout", Args: a{"5", "python3", "x.py", "-c", "conf"}}},
		{name: "env timeout nice ls", in: Input{Command: "env", Args: a{"timeout", "5", "nice", "ls"}}},
		{name: "awk's own code", in: Input{Command: "awk", Args: a{"{print}", "file.txt"}}},
	}
	for i := range cases {
		cases[i].policy = func(p *Policy) { p.AllowInterpreters = true }
	}
	runCheckCases(t, ws, cases)
}

// TestCheckLaunchedProgramsBounded: one command may start at most
// maxLaunched programs through its launchers.
func TestCheckLaunchedProgramsBounded(t *testing.T) {
	ws := newTestWorkspace(t)
	find := func(actions int) Input {
		args := []string{"."}
		for range actions {
			args = append(args, "-exec", "ls", ";")
		}
		return Input{Command: "find", Args: args}
	}
	policy := func(p *Policy) { p.AllowInterpreters, p.MaxArgs = true, 1000 }
	runCheckCases(t, ws, []checkCase{
		{name: "256 actions", in: find(maxLaunched), policy: policy},
		{name: "257 actions", in: find(maxLaunched + 1), policy: policy, want: ReasonLauncherDenied},
	})
}
