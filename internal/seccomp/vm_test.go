package seccomp

import (
	"encoding/binary"
	"fmt"
)

// seccompData mirrors struct seccomp_data, the input of a seccomp filter.
type seccompData struct {
	nr   uint32
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes lays d out as the kernel does on a little-endian machine.
func (d seccompData) bytes() []byte {
	b := make([]byte, 0, 64)
	b = binary.LittleEndian.AppendUint32(b, d.nr)
	b = binary.LittleEndian.AppendUint32(b, d.arch)
	b = binary.LittleEndian.AppendUint64(b, d.ip)
	for _, a := range d.args {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	return b
}

// decodeProgram parses an array of struct sock_filter as Filter.Bytes
// writes it, independently of encode.
func decodeProgram(b []byte) ([]Instruction, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("program is %d bytes, not a multiple of 8", len(b))
	}
	prog := make([]Instruction, 0, len(b)/8)
	for i := 0; i < len(b); i += 8 {
		prog = append(prog, Instruction{
			Code: binary.LittleEndian.Uint16(b[i:]),
			Jt:   b[i+2],
			Jf:   b[i+3],
			K:    binary.LittleEndian.Uint32(b[i+4:]),
		})
	}
	return prog, nil
}

// runBPF interprets a classic BPF program over d with the checks the
// kernel's seccomp_check_filter and bpf_check_classic make: at most 4096
// instructions, loads only of aligned words inside seccomp_data, jumps
// inside the program, and only the opcodes listed below. Unknown opcodes
// are an error rather than guessed at.
func runBPF(prog []Instruction, d seccompData) (uint32, error) {
	if len(prog) == 0 || len(prog) > 4096 {
		return 0, fmt.Errorf("program has %d instructions", len(prog))
	}
	if prog[len(prog)-1].Code != 0x06 {
		return 0, fmt.Errorf("last instruction %#x is not RET K", prog[len(prog)-1].Code)
	}
	data := d.bytes()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		jump := func(cond bool) error {
			off := int(in.Jf)
			if cond {
				off = int(in.Jt)
			}
			if pc+1+off >= len(prog) {
				return fmt.Errorf("instruction %d jumps past the end", pc)
			}
			pc += off
			return nil
		}
		var err error
		switch in.Code {
		case 0x20: // BPF_LD | BPF_W | BPF_ABS
			if in.K%4 != 0 || in.K+4 > uint32(len(data)) {
				return 0, fmt.Errorf("instruction %d loads bad offset %d", pc, in.K)
			}
			a = binary.LittleEndian.Uint32(data[in.K:])
		case 0x54: // BPF_ALU | BPF_AND | BPF_K
			a &= in.K
		case 0x05: // BPF_JMP | BPF_JA
			if pc+1+int(in.K) >= len(prog) {
				return 0, fmt.Errorf("instruction %d jumps past the end", pc)
			}
			pc += int(in.K)
		case 0x15: // BPF_JMP | BPF_JEQ | BPF_K
			err = jump(a == in.K)
		case 0x25: // BPF_JMP | BPF_JGT | BPF_K
			err = jump(a > in.K)
		case 0x35: // BPF_JMP | BPF_JGE | BPF_K
			err = jump(a >= in.K)
		case 0x45: // BPF_JMP | BPF_JSET | BPF_K
			err = jump(a&in.K != 0)
		case 0x06: // BPF_RET | BPF_K
			return in.K, nil
		default:
			return 0, fmt.Errorf("instruction %d has unsupported opcode %#x", pc, in.Code)
		}
		if err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("program fell off the end")
}
