package seccomp

import (
	"errors"
	"testing"
)

func TestAssemblerResolvesLabels(t *testing.T) {
	a := newAssembler()
	a.load(offNr)
	a.jeq(7, "deny", "")
	a.jset(0x10, "deny", "allow")
	a.label("allow")
	a.ret(retAllow)
	a.label("deny")
	a.ret(retErrno | errnoEPERM)
	got, err := a.assemble()
	if err != nil {
		t.Fatal(err)
	}
	want := []Instruction{
		{Code: opLdWAbs, K: offNr},
		{Code: opJeqK, Jt: 2, Jf: 0, K: 7},
		{Code: opJsetK, Jt: 1, Jf: 0, K: 0x10},
		{Code: opRetK, K: retAllow},
		{Code: opRetK, K: retErrno | errnoEPERM},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d instructions, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("instruction %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAssemblerRejectsBadJumps(t *testing.T) {
	for name, build := range map[string]func(a *assembler){
		"undefined": func(a *assembler) { a.jeq(1, "nowhere", "") },
		"backward": func(a *assembler) {
			a.label("top")
			a.load(offNr)
			a.jeq(1, "top", "")
		},
		"self": func(a *assembler) {
			a.label("self")
			a.jeq(1, "self", "")
		},
		"too far": func(a *assembler) {
			a.jeq(1, "far", "")
			for range 256 {
				a.load(offNr)
			}
			a.label("far")
		},
		"too long": func(a *assembler) {
			for range 4097 {
				a.load(offNr)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newAssembler()
			build(a)
			a.ret(retAllow)
			if _, err := a.assemble(); !errors.Is(err, ErrProgram) {
				t.Errorf("assemble() error = %v, want ErrProgram", err)
			}
		})
	}
}

func TestAssemblerFarthestJump(t *testing.T) {
	a := newAssembler()
	a.jeq(1, "far", "")
	for range 255 {
		a.load(offNr)
	}
	a.label("far")
	a.ret(retAllow)
	got, err := a.assemble()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Jt != 255 {
		t.Errorf("jt = %d, want 255", got[0].Jt)
	}
}
