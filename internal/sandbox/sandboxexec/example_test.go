package sandboxexec_test

import (
	"fmt"
	"strings"

	"github.com/execledger/execledger/internal/sandbox/sandboxexec"
)

func ExamplePlan_Argv() {
	p := sandboxexec.Plan{
		Program:     "/usr/bin/curl",
		ProgramArgs: []string{"-sS", "https://example.com/"},
		Env:         []string{"HTTPS_PROXY=http://127.0.0.1:3128"},
		Workspace:   "/Users/ci/ws/run-1",
		Network:     true,
		ProxyPort:   3128,
	}
	argv, err := p.Argv()
	if err != nil {
		panic(err)
	}
	fmt.Println(argv[0], argv[1], "<profile>", strings.Join(argv[3:], " "))
	for _, line := range strings.Split(argv[2], "\n") {
		if strings.Contains(line, "default") && !strings.HasPrefix(line, ";") || strings.Contains(line, "remote") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// /usr/bin/sandbox-exec -p <profile> -- /usr/bin/curl -sS https://example.com/
	// (deny default)
	// (remote tcp "localhost:3128"))
}
