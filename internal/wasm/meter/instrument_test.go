package meter

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// sec is a section for assemble: its id and contents.
type sec struct {
	id   byte
	data []byte
}

// assemble builds a module binary from sections.
func assemble(sections ...sec) []byte {
	out := append([]byte(nil), header...)
	for _, s := range sections {
		out = appendSection(out, s.id, s.data)
	}
	return out
}

// vecOf encodes a vector of already encoded entries.
func vecOf(entries ...[]byte) []byte {
	return bytes.Join(append([][]byte{appendUleb(nil, uint64(len(entries)))}, entries...), nil)
}

func nameOf(s string) []byte { return append(appendUleb(nil, uint64(len(s))), s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// funcBody encodes a function body without locals from its instructions.
func funcBody(code ...byte) []byte {
	b := append([]byte{0x00}, code...)
	return append(appendUleb(nil, uint64(len(b))), b...)
}

// nullary is a module with one () -> () function of the given code,
// exported as "f".
func nullary(code ...byte) []byte {
	return assemble(
		sec{secType, vecOf([]byte{0x60, 0x00, 0x00})},
		sec{secFunction, vecOf([]byte{0x00})},
		sec{secExport, vecOf(cat(nameOf("f"), []byte{0x00, 0x00}))},
		sec{secCode, vecOf(funcBody(code...))},
	)
}

// sections splits a module into its sections without checking them, and
// returns the offsets where sections end.
func sections(t *testing.T, wasm []byte) ([]sec, map[int]bool) {
	t.Helper()
	r := newReader(wasm, 0)
	r.off = len(header)
	var out []sec
	ends := map[int]bool{len(header): true}
	for r.len() > 0 {
		id, err := r.byte()
		if err != nil {
			t.Fatal(err)
		}
		size, err := r.u32()
		if err != nil {
			t.Fatal(err)
		}
		data, err := r.bytes(uint64(size))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sec{id, data})
		ends[r.off] = true
	}
	return out, ends
}

// fuelIndex returns the global index of FuelExport in an instrumented module.
func fuelIndex(t *testing.T, wasm []byte) uint32 {
	t.Helper()
	ss, _ := sections(t, wasm)
	for _, s := range ss {
		if s.id != secExport {
			continue
		}
		r := newReader(s.data, 0)
		n, _ := r.u32()
		for range n {
			name, _ := r.name()
			kind, _ := r.byte()
			idx, _ := r.u32()
			if name == FuelExport && kind == 0x03 {
				return idx
			}
		}
	}
	t.Fatal("no fuel export")
	return 0
}

func validate(t *testing.T, wasm []byte) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	if _, err := rt.CompileModule(ctx, wasm); err != nil {
		t.Fatalf("instrumented module does not compile: %v", err)
	}
}

func TestInstrumentKeepsCustomSectionsAndAddsSections(t *testing.T) {
	t.Parallel()
	custom := func(name, body string) sec { return sec{secCustom, cat(nameOf(name), []byte(body))} }
	first, middle, last := custom("first", "\x00\x01\x02"), custom("middle", "m"), custom("name", "\x00\x02\x01x")
	in := assemble(
		first,
		sec{secType, vecOf([]byte{0x60, 0x00, 0x00})},
		sec{secFunction, vecOf([]byte{0x00})},
		middle,
		sec{secCode, vecOf(funcBody(0x0b))},
		last,
	)
	out := mustInstrument(t, in, Options{})
	ss, _ := sections(t, out)
	var ids []byte
	var customs [][]byte
	for _, s := range ss {
		ids = append(ids, s.id)
		if s.id == secCustom {
			customs = append(customs, s.data)
		}
	}
	// The new sections go just before the first section that must follow
	// them.
	wantIDs := []byte{secCustom, secType, secFunction, secCustom, secGlobal, secExport, secCode, secCustom}
	if !bytes.Equal(ids, wantIDs) {
		t.Errorf("section ids %v, want %v", ids, wantIDs)
	}
	for i, want := range []sec{first, middle, last} {
		if i >= len(customs) || !bytes.Equal(customs[i], want.data) {
			t.Errorf("custom section %d changed", i)
		}
	}
	if idx := fuelIndex(t, out); idx != 0 {
		t.Errorf("fuel global index %d, want 0", idx)
	}
	validate(t, out)
}

func TestInstrumentAppendsFuelGlobalAfterImportedAndOwnGlobals(t *testing.T) {
	t.Parallel()
	global := []byte{0x7f, 0x00, 0x41, 0x07, 0x0b} // (global i32 (i32.const 7))
	in := assemble(
		sec{secType, vecOf([]byte{0x60, 0x00, 0x01, 0x7f})},
		sec{secImport, vecOf(cat(nameOf("env"), nameOf("g"), []byte{0x03, 0x7f, 0x00}))},
		sec{secFunction, vecOf([]byte{0x00})},
		sec{secGlobal, vecOf(global, global)},
		sec{secExport, vecOf(cat(nameOf("get"), []byte{0x00, 0x00}))},
		sec{secCode, vecOf(funcBody(0x23, 0x02, 0x0b))}, // global.get 2
	)
	out := mustInstrument(t, in, Options{})
	if idx := fuelIndex(t, out); idx != 3 {
		t.Errorf("fuel global index %d, want 3 (one imported, two defined)", idx)
	}
	if !bytes.Contains(out, []byte{0x23, 0x02, 0x0b}) {
		t.Error("the module's own global.get 2 was changed")
	}
}

func TestInstrumentRefusesReservedNames(t *testing.T) {
	t.Parallel()
	typ := sec{secType, vecOf([]byte{0x60, 0x00, 0x00})}
	importing := func(mod, name string) []byte {
		return assemble(typ, sec{secImport, vecOf(cat(nameOf(mod), nameOf(name), []byte{0x00, 0x00}))})
	}
	exporting := func(name string) []byte {
		return assemble(typ,
			sec{secFunction, vecOf([]byte{0x00})},
			sec{secExport, vecOf(cat(nameOf(name), []byte{0x00, 0x00}))},
			sec{secCode, vecOf(funcBody(0x0b))})
	}
	once := mustInstrument(t, exporting("run"), Options{})
	for name, wasm := range map[string][]byte{
		"export of the fuel name":   exporting(FuelExport),
		"export with the prefix":    exporting(ReservedPrefix + "x"),
		"import with the prefix":    importing("env", ReservedPrefix+"fuel"),
		"import module with prefix": importing(ReservedPrefix+"env", "f"),
		"already instrumented":      once,
	} {
		if _, err := Instrument(wasm, Options{}); !errors.Is(err, ErrReservedName) {
			t.Errorf("%s: got %v, want ErrReservedName", name, err)
		}
	}
	if _, err := Instrument(importing("env", "__execledger"), Options{}); err != nil {
		t.Errorf("a name that only looks like the prefix was refused: %v", err)
	}
}

func TestInstrumentRefusesMalformedInput(t *testing.T) {
	t.Parallel()
	typ := sec{secType, vecOf([]byte{0x60, 0x00, 0x00})}
	fn := sec{secFunction, vecOf([]byte{0x00})}
	for name, wasm := range map[string][]byte{
		"empty":                   nil,
		"magic only":              []byte("\x00asm"),
		"bad magic":               []byte("\x00wasm\x01\x00\x00\x00"),
		"section past the end":    cat(header, []byte{secType, 0x05, 0x00}),
		"section size overflow":   cat(header, []byte{secType, 0xff, 0xff, 0xff, 0xff, 0xff}),
		"out of order":            assemble(fn, typ),
		"repeated section":        assemble(typ, typ),
		"left-over bytes":         assemble(sec{secType, []byte{0x00, 0x00}}),
		"vector longer than data": assemble(sec{secType, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}}),
		"function without body":   assemble(typ, fn),
		"body without function":   assemble(typ, sec{secCode, vecOf(funcBody(0x0b))}),
		"type index out of range": assemble(typ, sec{secFunction, vecOf([]byte{0x01})}),
		"name not UTF-8":          assemble(sec{secCustom, cat(nameOf("\xff"), []byte("x"))}),
		"body without end":        nullary(0x01),
		"code after end":          nullary(0x0b, 0x01),
		"end closes too much":     nullary(0x0b, 0x0b),
		"else outside if":         nullary(0x05, 0x0b),
		"second else":             nullary(0x41, 0x00, 0x04, 0x40, 0x05, 0x05, 0x0b, 0x0b),
		"branch out of range":     nullary(0x0c, 0x01, 0x0b),
		"br_table out of range":   nullary(0x41, 0x00, 0x0e, 0x01, 0x00, 0x02, 0x0b),
		"unknown opcode":          nullary(0x27, 0x0b),
		"unknown SIMD gap":        nullary(0xfd, 0x9a, 0x01, 0x0b),
		"long LEB immediate":      nullary(0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0b),
		"truncated immediate":     nullary(0x44, 0x00, 0x00),
		"invalid block type":      nullary(0x02, 0x50, 0x0b, 0x0b),
		"invalid local type":      assemble(typ, fn, sec{secCode, vecOf([]byte{0x04, 0x01, 0x01, 0x55, 0x0b})}),
		// Index 0 would be the fuel global once instrumented.
		"global.set of no global": nullary(0x42, 0x00, 0x24, 0x00, 0x0b),
		"global.get of no global": nullary(0x23, 0x00, 0x1a, 0x0b),
	} {
		_, err := Instrument(wasm, Options{})
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestInstrumentRefusesTruncatedModules(t *testing.T) {
	t.Parallel()
	for _, file := range watFiles(t) {
		name := strings.TrimSuffix(strings.TrimPrefix(file, "testdata/"), ".wat")
		wasm := compileWAT(t, name)
		_, ends := sections(t, wasm)
		for n := range len(wasm) {
			// A cut between sections can leave a well-formed module.
			if _, err := Instrument(wasm[:n], Options{}); err == nil && !ends[n] {
				t.Errorf("%s cut to %d of %d bytes was accepted", name, n, len(wasm))
			}
		}
	}
}

func TestInstrumentRefusesUnsupportedFeatures(t *testing.T) {
	t.Parallel()
	typ := sec{secType, vecOf([]byte{0x60, 0x00, 0x00})}
	for name, wasm := range map[string][]byte{
		"component binary":      []byte("\x00asm\x0d\x00\x01\x00"),
		"unknown section id":    assemble(sec{14, nil}),
		"atomics":               nullary(0xfe, 0x03, 0x00, 0x0b),
		"exception try":         nullary(0x06, 0x40, 0x0b, 0x0b),
		"typed call_ref":        nullary(0x14, 0x00, 0x0b),
		"GC prefix":             nullary(0xfb, 0x00, 0x0b),
		"relaxed SIMD":          nullary(0xfd, 0x80, 0x02, 0x0b),
		"memory.discard":        nullary(0xfc, 0x12, 0x00, 0x0b),
		"multi-memory memarg":   nullary(0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x1a, 0x0b),
		"64-bit memory":         assemble(sec{secMemory, vecOf([]byte{0x04, 0x01})}),
		"tag import":            assemble(typ, sec{secImport, vecOf(cat(nameOf("m"), nameOf("t"), []byte{0x04, 0x00, 0x00}))}),
		"GC struct type":        assemble(sec{secType, vecOf([]byte{0x5f, 0x00, 0x00})}),
		"typed reference local": assemble(typ, sec{secFunction, vecOf([]byte{0x00})}, sec{secCode, vecOf([]byte{0x05, 0x01, 0x01, 0x63, 0x70, 0x0b})}),
		"50,001 locals": assemble(typ, sec{secFunction, vecOf([]byte{0x00})},
			sec{secCode, vecOf(cat([]byte{0x06, 0x01}, appendUleb(nil, 50001), []byte{0x7f, 0x0b}))}),
	} {
		_, err := Instrument(wasm, Options{})
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: got %v, want ErrUnsupported", name, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	wasm := nullary(0x0b)
	for name, opts := range map[string]Options{
		"instruction cost": {InstructionCost: maxCost + 1},
		"byte cost":        {ByteCost: maxCost + 1},
		"page cost":        {PageCost: maxCost + 1},
		"initial fuel":     {InitialFuel: -1},
	} {
		if _, err := Instrument(wasm, opts); err == nil {
			t.Errorf("%s: accepted %+v", name, opts)
		}
	}
	if _, err := Instrument(wasm, Options{InstructionCost: maxCost, ByteCost: maxCost, PageCost: maxCost}); err != nil {
		t.Errorf("maximum costs refused: %v", err)
	}
}
