package procinput_test

import (
	"errors"
	"fmt"

	"github.com/execledger/execledger/internal/procinput"
)

func ExampleParse() {
	in, err := procinput.Parse([]byte(`{"command":"ls","args":["ls","--cwd","src","-l"],"background":true}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %q cwd=%s background=%s\n", in.Command, in.Args, in.Cwd, in.Background.Mode)
	// Output: ls ["-l"] cwd=src background=run_owned
}

func ExampleCheck() {
	policy := procinput.Policy{
		AllowedExecutables: []string{"find", "git", "ls"},
		WorkspaceRoot:      "/srv/workspaces/run-1",
	}
	for _, raw := range []string{
		`{"command":"bash","args":["-c","id"]}`,
		`{"command":"find","args":[".","-exec","sh","-c","id",";"]}`,
		`{"command":"git","args":["-c","core.pager=sh -c id","log"]}`,
	} {
		in, err := procinput.Parse([]byte(raw))
		if err != nil {
			panic(err)
		}
		_, err = procinput.Check(in, policy)
		var e *procinput.Error
		if errors.As(err, &e) {
			fmt.Println(e.Kind, e.Reason)
		}
	}
	// Output:
	// capability_denied process.executable_not_allowlisted
	// capability_denied process.launcher_denied
	// capability_denied process.launcher_denied
}
