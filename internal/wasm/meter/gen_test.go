package meter

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

// FuzzInstrumentGenerated turns fuzz bytes into valid modules, so that
// every input reaches the engine: arbitrary bytes almost never make a
// valid module. The generated code nests blocks, loops and ifs with
// multi-value block types, branches of every kind to every depth, code
// after unconditional branches, calls, traps and bulk memory operations.
// Instrumented, with and without Options.Yield, each module must compile
// and behave like the original, and use the same fuel either way.
func FuzzInstrumentGenerated(f *testing.F) {
	for _, seed := range []string{
		"", "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b",
		"\x11\x00\x01\x15\x02\x17\x03\x14\x00\x15\x01",
		"\x12\x00\x01\x02\x13\x00\x16\x01\x14\x14\x15\x00\x17\x02\x03",
		"\x10\x03\x00\x05\x01\x04\x02\x0a\x05\x0b\x06\x16\x00\x18\x00",
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(64).WithCloseOnContextDone(true)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	f.Cleanup(func() { rt.Close(ctx) })
	instantiateYield(f, rt, &yielder{quantum: 1000})

	f.Fuzz(func(t *testing.T, src []byte) {
		wasm := generateModule(src)
		orig, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatalf("generated module is invalid (generator bug): %v", err)
		}
		defer orig.Close(ctx)
		out, err := Instrument(wasm, Options{InitialFuel: 1 << 62})
		if err != nil {
			t.Fatalf("Instrument: %v", err)
		}
		yout, err := Instrument(wasm, Options{InitialFuel: 1 << 62, Yield: true})
		if err != nil {
			t.Fatalf("Instrument with Yield: %v", err)
		}
		metered := mustCompile(t, rt, out)
		defer metered.Close(ctx)
		yielding := mustCompile(t, rt, yout)
		defer yielding.Close(ctx)
		compareRuns(t, rt, orig, metered, yielding)
	})
}

// generateModule builds a module with an exported memory, a mutable global
// and two functions, "run" (i32 i32) -> i32 and "helper" (i32) -> i32,
// whose bodies src drives. Every function entry and loop head takes one
// from a budget global and traps at zero, so the original always ends.
func generateModule(src []byte) []byte {
	g := &progGen{src: src}
	run := g.function(2, 160)
	helper := g.function(1, 80)
	i32 := byte(0x7f)
	return assemble(
		sec{secType, vecOf(
			[]byte{0x60, 2, i32, i32, 1, i32},      // 0: run
			[]byte{0x60, 2, i32, i32, 2, i32, i32}, // 1: a block type
			[]byte{0x60, 1, i32, 1, i32},           // 2: helper, a block type
		)},
		sec{secFunction, vecOf([]byte{0}, []byte{2})},
		sec{secMemory, vecOf([]byte{0x01, 0x01, 0x02})},
		sec{secGlobal, vecOf(
			cat([]byte{i32, 0x01, 0x41}, appendSleb(nil, 2000), []byte{0x0b}), // budget
			[]byte{i32, 0x01, 0x41, 0x00, 0x0b},
		)},
		sec{secExport, vecOf(
			cat(nameOf("run"), []byte{0x00, 0x00}),
			cat(nameOf("helper"), []byte{0x00, 0x01}),
			cat(nameOf("mem"), []byte{0x02, 0x00}),
			cat(nameOf("g"), []byte{0x03, 0x01}),
		)},
		sec{secCode, vecOf(run, helper)},
		sec{secData, vecOf(cat([]byte{0x00, 0x41, 0x00, 0x0b}, nameOf("hello")))},
	)
}

// genFrame is an open block in generated code. All values are i32, so a
// frame is described by counts.
type genFrame struct {
	loop, isIf, hasElse bool
	params, results     int
	floor               int // stack height below the frame's values
}

// arity is the number of values a branch to the frame carries.
func (f genFrame) arity() int {
	if f.loop {
		return f.params
	}
	return f.results
}

// progGen generates function bodies, tracking the operand stack height so
// that everything it writes validates.
type progGen struct {
	src  []byte
	out  []byte
	h    int
	ctrl []genFrame
}

// blockTypes are the block types generated: encoding, params, results.
var blockTypes = []struct {
	enc             byte
	params, results int
}{{0x40, 0, 0}, {0x7f, 0, 1}, {0x02, 1, 1}, {0x01, 2, 2}, {0x00, 2, 1}}

var (
	binops = []byte{0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, 0x73,
		0x74, 0x75, 0x76, 0x77, 0x78, 0x46, 0x47, 0x48, 0x49, 0x4a}
	unops = []byte{0x45, 0x67, 0x68, 0x69, 0xc0, 0xc1}
)

func (g *progGen) byte() byte {
	if len(g.src) == 0 {
		return 0
	}
	c := g.src[0]
	g.src = g.src[1:]
	return c
}

func (g *progGen) emit(b ...byte) { g.out = append(g.out, b...) }

func (g *progGen) push(k int32) {
	g.emit(0x41)
	g.out = appendSleb(g.out, int64(k))
	g.h++
}

// need pushes constants until the current frame holds n values.
func (g *progGen) need(n int) {
	for g.h-g.top().floor < n {
		g.push(int32(int8(g.byte())))
	}
}

// fit drops or pushes until the current frame holds exactly n values.
func (g *progGen) fit(n int) {
	for g.h-g.top().floor > n {
		g.emit(0x1a)
		g.h--
	}
	g.need(n)
}

func (g *progGen) top() *genFrame { return &g.ctrl[len(g.ctrl)-1] }

// unreachable marks the rest of the current frame as dead code.
func (g *progGen) unreachable() { g.h = g.top().floor }

// budget takes one from global 0 and traps when it is used up.
func (g *progGen) budget() {
	g.emit(0x23, 0x00, 0x45, 0x04, 0x40, 0x00, 0x0b, 0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00)
}

// function returns the body, with its size, of a function with params
// i32 parameters and one i32 result, at most ops operations long.
func (g *progGen) function(params, ops int) []byte {
	g.out, g.h = nil, 0
	g.ctrl = []genFrame{{results: 1}}
	g.emit(0x01, 0x02, 0x7f) // two i32 locals
	g.budget()
	locals := byte(params + 2)
	for range ops {
		if len(g.src) == 0 {
			break
		}
		g.op(locals)
	}
	for len(g.ctrl) > 1 {
		g.end()
	}
	g.fit(1)
	g.emit(0x0b)
	return append(appendUleb(nil, uint64(len(g.out))), g.out...)
}

func (g *progGen) op(locals byte) {
	switch c := g.byte() % 26; c {
	case 0:
		g.push(int32(int8(g.byte())) << (g.byte() % 32))
	case 1:
		g.emit(0x20, g.byte()%locals)
		g.h++
	case 2, 3: // local.set, local.tee
		g.need(1)
		g.emit(0x21+c-2, g.byte()%locals)
		g.h -= int(3 - c)
	case 4:
		g.need(2)
		g.emit(binops[int(g.byte())%len(binops)])
		g.h--
	case 5:
		g.need(1)
		g.emit(unops[int(g.byte())%len(unops)])
	case 6:
		g.need(1)
		g.emit(0x1a)
		g.h--
	case 7:
		g.need(3)
		g.emit(0x1b)
		g.h -= 2
	case 8: // i32.load from a masked address
		g.need(1)
		g.emit(0x41, 0xfc, 0xff, 0x03, 0x71, 0x28, 0x02, 0x00)
	case 9: // i32.store to a masked address, through the last local
		g.need(2)
		g.emit(0x21, locals-1, 0x41, 0xfc, 0xff, 0x03, 0x71, 0x20, locals-1, 0x36, 0x02, 0x00)
		g.h -= 2
	case 10, 11: // memory.fill, memory.copy
		g.push(int32(g.byte()) << 8)
		g.push(int32(g.byte()))
		g.push(int32(g.byte()) << (g.byte() % 10))
		if c == 10 {
			g.emit(0xfc, 0x0b, 0x00)
		} else {
			g.emit(0xfc, 0x0a, 0x00, 0x00)
		}
		g.h -= 3
	case 12:
		g.emit(0x3f, 0x00)
		g.h++
	case 13:
		g.need(1)
		g.emit(0x40, 0x00)
	case 14:
		g.emit(0x23, 0x01)
		g.h++
	case 15:
		g.need(1)
		g.emit(0x24, 0x01)
		g.h--
	case 16, 17, 18: // block, loop, if
		g.open(c)
	case 19:
		g.els()
	case 20:
		if len(g.ctrl) > 1 {
			g.end()
		}
	case 21, 22, 23: // br, br_if, br_table
		g.branch(c)
	case 24:
		g.need(1)
		g.emit(0x0f)
		g.unreachable()
	case 25: // call the other function, or trap
		switch g.byte() % 4 {
		case 0:
			g.emit(0x00)
			g.unreachable()
		case 1:
			g.need(1)
			g.emit(0x10, 1)
		default:
			g.need(2)
			g.emit(0x10, 0)
			g.h--
		}
	}
}

func (g *progGen) open(c byte) {
	if len(g.ctrl) > 24 {
		return
	}
	bt := blockTypes[int(g.byte())%len(blockTypes)]
	isIf := c == 18
	cond := 0
	if isIf {
		cond = 1
	}
	g.need(bt.params + cond)
	g.emit(0x02+c-16, bt.enc)
	g.h -= cond
	g.ctrl = append(g.ctrl, genFrame{loop: c == 17, isIf: isIf, params: bt.params, results: bt.results, floor: g.h - bt.params})
	if c == 17 {
		g.budget()
	}
}

func (g *progGen) els() {
	f := g.top()
	if !f.isIf || f.hasElse {
		return
	}
	g.fit(f.results)
	g.emit(0x05)
	f.hasElse = true
	g.h = f.floor + f.params
}

func (g *progGen) end() {
	f := g.top()
	if f.isIf && !f.hasElse && f.params != f.results {
		g.els() // an if without else must give back its parameters
	}
	g.fit(f.results)
	g.emit(0x0b)
	g.h = f.floor + f.results
	g.ctrl = g.ctrl[:len(g.ctrl)-1]
}

func (g *progGen) branch(c byte) {
	d := int(g.byte()) % len(g.ctrl)
	arity := g.ctrl[len(g.ctrl)-1-d].arity()
	switch c {
	case 21:
		g.need(arity)
		g.emit(0x0c, byte(d))
		g.unreachable()
	case 22:
		g.need(arity + 1)
		g.emit(0x0d, byte(d))
		g.h--
	case 23:
		var targets []byte
		for range g.byte() % 4 {
			if t := int(g.byte()) % len(g.ctrl); g.ctrl[len(g.ctrl)-1-t].arity() == arity {
				targets = append(targets, byte(t))
			}
		}
		g.need(arity + 1)
		g.emit(0x0e, byte(len(targets)))
		g.emit(targets...)
		g.emit(byte(d))
		g.unreachable()
	}
}
