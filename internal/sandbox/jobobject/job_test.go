package jobobject

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/golden"
)

// limitedPlan sets every limit.
var limitedPlan = Plan{
	Program:     `C:\Program Files\Git\cmd\git.exe`,
	ProgramArgs: []string{"status"},
	Env:         []string{"SystemRoot=C:\\Windows", "API_TOKEN=hunter2"},
	Dir:         `C:\execledger\ws\run-1`,
	Timeout:     30 * time.Second,
	Limits: Limits{
		ActiveProcesses: 32,
		JobMemory:       1 << 30,
		ProcessMemory:   512 << 20,
		ProcessUserTime: 1500 * time.Millisecond,
		JobUserTime:     4 * time.Second,
		CPURate:         2500,
	},
}

func TestJobWithoutLimits(t *testing.T) {
	c, err := Plan{Program: `C:\t.exe`, Dir: `C:\ws`}.Job()
	if err != nil {
		t.Fatal(err)
	}
	want := JobConfig{
		LimitFlags:          0x2000 | 0x400, // KILL_ON_JOB_CLOSE, DIE_ON_UNHANDLED_EXCEPTION
		UIRestrictionsClass: 0xff,
		CreationFlags:       0x4 | 0x200 | 0x400 | 0x80000 | 0x08000000,
	}
	if c != want {
		t.Errorf("job = %+v\nwant  %+v", c, want)
	}
}

func TestJobWithLimits(t *testing.T) {
	c, err := limitedPlan.Job()
	if err != nil {
		t.Fatal(err)
	}
	if want := uint32(0x2000 | 0x400 | 0x8 | 0x200 | 0x100 | 0x2 | 0x4); c.LimitFlags != want {
		t.Errorf("limit flags %#x, want %#x", c.LimitFlags, want)
	}
	if c.LimitFlags&(limitBreakawayOK|limitSilentBreakawayOK) != 0 {
		t.Error("the job allows breakaway")
	}
	if c.ActiveProcessLimit != 32 || c.JobMemoryLimit != 1<<30 || c.ProcessMemoryLimit != 512<<20 {
		t.Errorf("job = %+v", c)
	}
	if c.PerProcessUserTimeLimit != 15_000_000 || c.PerJobUserTimeLimit != 40_000_000 {
		t.Errorf("time limits %d, %d (100 ns units)", c.PerProcessUserTimeLimit, c.PerJobUserTimeLimit)
	}
	if c.CPURate == nil || *c.CPURate != (CPURateControl{ControlFlags: 0x1 | 0x4, CPURate: 2500}) {
		t.Errorf("CPU rate %+v", c.CPURate)
	}
}

func TestTicksRoundUp(t *testing.T) {
	for d, want := range map[time.Duration]int64{1: 1, 100: 1, 101: 2, time.Millisecond: 10_000, time.Duration(1<<63 - 1): (1<<63-1)/100 + 1} {
		if got := ticks(d); got != want {
			t.Errorf("ticks(%d) = %d, want %d", d, got, want)
		}
	}
}

func TestLimitsRefused(t *testing.T) {
	for name, l := range map[string]Limits{
		"CPU rate over 100%":         {CPURate: 10001},
		"negative process user time": {ProcessUserTime: -time.Second},
		"negative job user time":     {JobUserTime: -1},
	} {
		if _, err := (Plan{Program: `C:\t.exe`, Dir: `C:\ws`, Limits: l}).Job(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: error %v, want ErrInvalidPlan", name, err)
		}
	}
	if _, err := (Plan{Program: `C:\t.exe`, Dir: `C:\ws`, Timeout: -1}).Job(); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("negative timeout: error %v, want ErrInvalidPlan", err)
	}
}

func TestEnforcementGolden(t *testing.T) {
	raw, err := json.MarshalIndent(limitedPlan.Enforcement(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "enforcement.golden", append(raw, '\n'))
}
