// Package meter adds deterministic fuel metering to WebAssembly modules by
// rewriting their bytecode, for engines such as wazero that have no fuel of
// their own.
//
// Instrument appends one mutable i64 global to the module, after its own
// globals so that no index changes, and exports it as FuelExport. The host
// sets the fuel with SetFuel before a call and reads what is left with
// Fuel after it. Instrumented code subtracts its cost from the global as it
// runs and executes unreachable as soon as the global drops below zero, so
// a call that runs out of fuel ends in a trap with Fuel negative, while any
// other trap leaves Fuel at zero or more. Because the fuel is ordinary
// WebAssembly state, the same module and input use exactly the same fuel on
// every conforming engine: wazero's compiler and interpreter agree.
//
// # Cost model
//
// Every instruction of the original module costs Options.InstructionCost
// (1). Code is charged a segment at a time, at the segment's head, where a
// segment is the basic block of this model: a maximal run of instructions
// that control enters only at its first instruction and leaves only after
// its last. A segment ends after each loop, if, else, br, br_if, br_table,
// return, unreachable, return_call and return_call_indirect, after the end
// of every if, after the end of a block that some branch names, and at the
// function's final end. Its heads are therefore the function's entry, the
// head of every loop body and of every if and else arm, the instruction
// after a conditional branch, and every point a branch can land on. A block
// instruction does not end a segment (nothing branches to a block's
// start), nor does the end of a loop or of a block no branch names
// (control only falls into what follows them), nor a call (control comes
// back to the next instruction). The code after an unconditional transfer
// is dead up to the next head and is not charged.
//
// Hence the fuel a call uses is exactly the number of instructions it
// executes, where a taken branch is the last instruction counted before
// its target, the end of a block or arm counts only when control falls
// into it, and, because a segment is paid for on entry, a trap part-way
// through a segment has already paid for the rest of it.
//
// On top of that, memory.fill, memory.copy and memory.init cost
// Options.ByteCost (1) per byte; table.fill, table.copy, table.init and
// table.grow cost Options.ByteCost per element; memory.grow costs
// Options.PageCost (1024) per page asked for. These charges are taken from
// the count on the operand stack just before the instruction runs, so an
// operation that then traps (out of bounds) has still paid.
//
// The charge itself is stack-neutral: it pushes and pops only its own
// values, so it is valid wherever it is placed, including at the head of a
// block with parameters. For a segment of n instructions it is
//
//	global.get F; i64.const n; i64.sub; global.set F
//	global.get F; i64.const 0; i64.lt_s; if; unreachable; end
//
// and before a bulk operation, whose count sits on top of the stack, it
// copies the count into an i32 local added after the function's own locals:
//
//	local.tee T; global.get F; local.get T; i64.extend_i32_u;
//	i64.const cost; i64.mul; i64.sub; global.set F; ...check as above
//
// The start function runs when an instance is created, before the host can
// call SetFuel; it draws on Options.InitialFuel, which is 0 unless set, so
// that nothing runs unmetered. Options.DeferStart exports it instead, for
// the host to call once the fuel and floor are set.
//
// Fuel measures the module's own work only. Host functions it imports cost
// nothing here unless the host charges for them with Charge, which takes
// from the same global (so that a charge that does not fit ends the call
// as running out in code does). An engine's own limits are not metered: a call that
// overflows the engine's call stack traps at a depth that depends on the
// engine (2,000 frames in wazero's interpreter, millions in its compiler),
// so the fuel such a call used differs between engines. It ends with the
// fuel at zero or more, a runtime failure, not an exhausted quota.
//
// # Yielding to the host
//
// A call into wazero's compiled code cannot be preempted by Go: while a
// long loop runs, the garbage collector cannot stop the world, so every
// goroutine that allocates waits, and nothing else can end the call
// either, since a global written from another goroutine is a data race
// under the interpreter. With Options.Yield the module itself calls back
// into Go now and then, and the host decides there, in the call's own
// goroutine, whether it goes on (a deadline, a cancelled context), while
// the Go runtime gets the chance to preempt it.
//
// Instrument then appends the types () -> (i32) and () -> () to the type
// section, so that no type index changes, and adds a function import
// YieldModule.YieldName of the first after the module's own imports (so every function the
// module defines moves up one index, and calls, references, element
// segments, exports, the start function and the name section are
// renumbered to match), a second mutable i64 global, the floor, exported
// as FloorExport and 0 at instantiation, and a function $slow, not
// metered, after the module's own. The check of every segment at a
// function's entry or a loop's head becomes
//
//	global.set F; global.get F; global.get L; i64.lt_s; if; call $slow; end
//
// where L is the floor, and $slow is
//
//	global.get F; i64.const 0; i64.lt_s; if; unreachable; end
//	call $yield; if; unreachable; end
//
// The other checks stay as they were: no code runs for long without
// passing an entry or a loop head, and a call there, though rarely taken,
// costs compiled code the registers it must save around it (fib(27)
// metered: 2.7x unmetered with a yield check at every segment head, 2.0x
// at entries and loop heads only, 1.6x without Yield).
//
// So the fuel used is the same as without Yield, since neither yield nor
// $slow costs any; a check that finds the fuel negative traps whatever the
// floor and yield do, with the fuel negative as before; any yield check
// that finds it below the floor calls yield, whose non-zero result traps
// with unreachable, the fuel at zero or more. The host chooses when yield
// runs next by moving the floor with SetFloor: floor = max(0,
// fuel-quantum) calls it about every quantum units of fuel. At floor 0,
// the default, it is never called. The floor cannot be negative, or
// running out of fuel would not trap. In wazero, yield is a function of a
// host module named YieldModule, of type func(context.Context,
// api.Module) uint32, whose api.Module is the calling instance, so that
// it can read Fuel and call SetFloor.
//
// # What is supported
//
// The decoder reads the WebAssembly 2.0 instruction set, which wazero
// enables by default: MVP, sign extension, non-trapping float-to-int,
// multi-value (block types by type index), bulk memory, reference types
// and fixed-width SIMD; also the tail-call instructions. Custom sections are
// kept byte for byte (debug information that refers to code offsets goes
// stale). Refused with ErrUnsupported: exception handling, typed function
// references and GC, threads (atomics), relaxed SIMD, multi-memory memory
// arguments, 64-bit memories and tables, non-core (component) binaries,
// unknown section ids, which could change an index space, and functions
// with more than 50,000 parameters and locals. A module that imports or
// exports a name starting with ReservedPrefix, including an already
// instrumented one, is refused with ErrReservedName.
package meter
