package jobobject

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestEnvBlock(t *testing.T) {
	p := Plan{Program: `C:\t.exe`, Dir: `C:\ws`, Env: []string{"b=1", "_x=3", "A=2", "a1=4", "Ü=ÿ🙂"}}
	block, err := p.EnvBlock()
	if err != nil {
		t.Fatal(err)
	}
	// Upper-cased, "_" (0x5F) sorts after "B" (0x42); "Ü" (0xDC) last.
	var want []uint16
	for _, kv := range []string{"A=2", "a1=4", "b=1", "_x=3", "Ü=ÿ🙂"} {
		want = append(append(want, utf16.Encode([]rune(kv))...), 0)
	}
	want = append(want, 0)
	if !slices.Equal(block, want) {
		t.Errorf("block = %q\nwant    %q", string(utf16.Decode(block)), string(utf16.Decode(want)))
	}
	if n := len(utf16.Encode([]rune("🙂"))); n != 2 {
		t.Fatalf("🙂 is %d UTF-16 units", n)
	}

	empty, err := Plan{Program: `C:\t.exe`, Dir: `C:\ws`}.EnvBlock()
	if err != nil || !slices.Equal(empty, []uint16{0, 0}) {
		t.Errorf("empty block = %v, %v; want two NULs", empty, err)
	}
}

func TestEnvBlockDeterministic(t *testing.T) {
	env := []string{"Z=1", "y=2", "X=3", "PATH=C:\\bin", "SystemRoot=C:\\Windows"}
	first, err := Plan{Program: `C:\t.exe`, Dir: `C:\ws`, Env: env}.EnvBlock()
	if err != nil {
		t.Fatal(err)
	}
	reversed := slices.Clone(env)
	slices.Reverse(reversed)
	again, err := Plan{Program: `C:\t.exe`, Dir: `C:\ws`, Env: reversed}.EnvBlock()
	if err != nil || !slices.Equal(first, again) {
		t.Errorf("the order of Env changed the block: %v", err)
	}
}

func TestEnvRefused(t *testing.T) {
	for name, env := range map[string][]string{
		"no =":            {"PATH"},
		"empty name":      {"=hunter2"},
		"drive variable":  {"=C:=C:\\hunter2"},
		"NUL":             {"A=hunter2\x00c"},
		"invalid UTF-8":   {"A=hunter2\xff"},
		"case duplicate":  {"Path=C:\\hunter2", "PATH=C:\\b"},
		"exact duplicate": {"A=hunter2", "A=hunter2"},
	} {
		p := Plan{Program: `C:\t.exe`, Dir: `C:\ws`, Env: env}
		_, err := p.EnvBlock()
		if !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: error %v, want ErrInvalidPlan", name, err)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %q quotes a value", name, err)
		}
	}
}
