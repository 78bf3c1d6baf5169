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
