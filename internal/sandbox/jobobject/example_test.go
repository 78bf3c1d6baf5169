package jobobject_test

import (
	"fmt"
	"time"

	"github.com/execledger/execledger/internal/sandbox/jobobject"
)

func ExamplePlan_CommandLine() {
	p := jobobject.Plan{
		Program:     `C:\Program Files\Git\cmd\git.exe`,
		ProgramArgs: []string{"commit", "-m", `say "hi"`, `C:\dir with space\`},
		Dir:         `C:\execledger\ws\run-1`,
	}
	line, err := p.CommandLine()
	if err != nil {
		panic(err)
	}
	fmt.Println(line)
	// Output: "C:\Program Files\Git\cmd\git.exe" commit -m "say \"hi\"" "C:\dir with space\\"
}

func ExamplePlan_Job() {
	p := jobobject.Plan{
		Program: `C:\Windows\System32\where.exe`,
		Dir:     `C:\execledger\ws\run-1`,
		Limits:  jobobject.Limits{ActiveProcesses: 16, JobMemory: 256 << 20, ProcessUserTime: 2 * time.Second},
	}
	c, err := p.Job()
	if err != nil {
		panic(err)
	}
	fmt.Printf("limit flags %#x, UI restrictions %#x, creation flags %#x\n", c.LimitFlags, c.UIRestrictionsClass, c.CreationFlags)
	fmt.Println(p.Enforcement()["limit_flags"])
	// Output:
	// limit flags 0x260a, UI restrictions 0xff, creation flags 0x8080604
	// [JOB_OBJECT_LIMIT_PROCESS_TIME JOB_OBJECT_LIMIT_ACTIVE_PROCESS JOB_OBJECT_LIMIT_JOB_MEMORY JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE]
}
