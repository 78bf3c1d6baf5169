package wasmrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tetratelabs/wazero"
)

// tables returns the limits of the tables wasm defines.
func tables(t *testing.T, wasm []byte) []string {
	t.Helper()
	secs, err := sections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	r := contents(wasm, secs, secTable)
	if r == nil {
		return nil
	}
	var out []string
	for n := r.u32(); n > 0; n-- {
		r.byte()
		lo, hi, hasMax := r.limits()
		out = append(out, fmt.Sprintf("%d..%d/%v", lo, hi, hasMax))
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return out
}

func TestBoundTables(t *testing.T) {
	t.Parallel()
	in := wat(t, "table_grow")
	if got := fmt.Sprint(tables(t, in)); got != "[1..0/false]" {
		t.Fatalf("table_grow's table %s", got)
	}
	out, err := boundTables(in, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tables(t, out)); got != "[1..100000/true]" {
		t.Fatalf("bounded %s", got)
	}
	// The rewritten module is valid.
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	if _, err := rt.CompileModule(ctx, out); err != nil {
		t.Fatal(err)
	}
	// A bounded table, or none, leaves the module as it was.
	for _, m := range [][]byte{out, wat(t, "answer")} {
		again, err := boundTables(m, 100_000)
		if err != nil || !bytes.Equal(again, m) {
			t.Errorf("changed a module that needed no change: %v", err)
		}
	}
	// A lower limit lowers a declared maximum.
	low, err := boundTables(out, 10)
	if err != nil || fmt.Sprint(tables(t, low)) != "[1..10/true]" {
		t.Errorf("%v %v", tables(t, low), err)
	}
	if _, err := boundTables(wat(t, "big_table"), 100_000); !errors.Is(err, errTableLimit) {
		t.Errorf("big table: %v", err)
	}
}

func TestBinaryReaders(t *testing.T) {
	t.Parallel()
	mins, err := memoryMins(wat(t, "big_memory"))
	if err != nil || fmt.Sprint(mins) != "[2000]" {
		t.Errorf("memory minimums %v %v", mins, err)
	}
	imps, err := otherImports(wat(t, "import_memory"))
	if err != nil || fmt.Sprint(imps) != "[memory env.memory]" {
		t.Errorf("imports %v %v", imps, err)
	}
	imps, err = otherImports(wat(t, "unknown_import")) // functions only
	if err != nil || len(imps) != 0 {
		t.Errorf("imports %v %v", imps, err)
	}
	for _, bad := range [][]byte{nil, []byte("\x00asm\x02\x00\x00\x00"), append(bytes.Clone(wasmMagic), 0x04, 0x80)} {
		if _, err := sections(bad); !errors.Is(err, errBinary) {
			t.Errorf("sections(%q): %v", bad, err)
		}
	}
}

// FuzzBinaryReaders feeds the readers arbitrary bytes: they must not
// panic, and what boundTables returns must read back with every table
// bounded.
func FuzzBinaryReaders(f *testing.F) {
	for _, name := range []string{"answer", "table_grow", "big_table", "import_memory", "unknown_import", "grow", "stdout"} {
		f.Add(wat(f, name))
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		memoryMins(wasm)
		otherImports(wasm)
		out, err := boundTables(wasm, 1000)
		if err != nil {
			return
		}
		secs, err := sections(out)
		if err != nil {
			t.Fatalf("boundTables made an unreadable module: %v", err)
		}
		if r := contents(out, secs, secTable); r != nil {
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.byte()
				if lo, hi, hasMax := r.limits(); r.err == nil && (!hasMax || hi > 1000 || lo > 1000) {
					t.Fatalf("table %d..%d/%v left unbounded", lo, hi, hasMax)
				}
			}
		}
	})
}
