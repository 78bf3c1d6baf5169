package seccomp

import (
	"errors"
	"fmt"
)

// ErrProgram reports a program the assembler cannot encode: an unknown or
// backward jump target, a jump farther than 255 instructions, or more than
// BPF_MAXINSNS instructions.
var ErrProgram = errors.New("cannot assemble seccomp program")

// assembler lays out a BPF program whose conditional jumps name labels;
// assemble turns the labels into the forward offsets BPF requires. An empty
// label means "the next instruction".
type assembler struct {
	insns  []pendingInstruction
	labels map[string]int
}

type pendingInstruction struct {
	Instruction
	jt, jf string
}

func newAssembler() *assembler {
	return &assembler{labels: make(map[string]int)}
}

// label marks the position of the next instruction.
func (a *assembler) label(name string) {
	a.labels[name] = len(a.insns)
}

// load loads the 32-bit word at offset off of seccomp_data into A.
func (a *assembler) load(off uint32) {
	a.emit(Instruction{Code: opLdWAbs, K: off}, "", "")
}

// jeq jumps to jt when A == k, else to jf.
func (a *assembler) jeq(k uint32, jt, jf string) {
	a.emit(Instruction{Code: opJeqK, K: k}, jt, jf)
}

// jset jumps to jt when A & k != 0, else to jf.
func (a *assembler) jset(k uint32, jt, jf string) {
	a.emit(Instruction{Code: opJsetK, K: k}, jt, jf)
}

// ret ends the program with the seccomp action k.
func (a *assembler) ret(k uint32) {
	a.emit(Instruction{Code: opRetK, K: k}, "", "")
}

func (a *assembler) emit(in Instruction, jt, jf string) {
	a.insns = append(a.insns, pendingInstruction{Instruction: in, jt: jt, jf: jf})
}

// assemble resolves the labels.
func (a *assembler) assemble() ([]Instruction, error) {
	if len(a.insns) > maxInsns {
		return nil, fmt.Errorf("%w: %d instructions, limit %d", ErrProgram, len(a.insns), maxInsns)
	}
	out := make([]Instruction, len(a.insns))
	for pc, p := range a.insns {
		in := p.Instruction
		var err error
		if in.Jt, err = a.offset(pc, p.jt); err != nil {
			return nil, err
		}
		if in.Jf, err = a.offset(pc, p.jf); err != nil {
			return nil, err
		}
		out[pc] = in
	}
	return out, nil
}

// offset is the jump offset from pc to label.
func (a *assembler) offset(pc int, label string) (uint8, error) {
	if label == "" {
		return 0, nil
	}
	target, ok := a.labels[label]
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: instruction %d jumps to undefined label %q", ErrProgram, pc, label)
	case target <= pc || target >= len(a.insns):
		return 0, fmt.Errorf("%w: instruction %d jumps to %q at %d, not a later instruction", ErrProgram, pc, label, target)
	case target-pc-1 > maxOffset:
		return 0, fmt.Errorf("%w: instruction %d jumps %d instructions to %q, limit %d", ErrProgram, pc, target-pc-1, label, maxOffset)
	}
	return uint8(target - pc - 1), nil
}
