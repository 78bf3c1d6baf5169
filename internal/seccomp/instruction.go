package seccomp

import "encoding/binary"

// Instruction is one classic BPF instruction, laid out like the kernel's
// struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }.
type Instruction struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

// instructionSize is sizeof(struct sock_filter).
const instructionSize = 8

// Classic BPF opcodes the filter uses (linux/bpf_common.h).
const (
	opLdWAbs  = 0x00 | 0x00 | 0x20 // BPF_LD | BPF_W | BPF_ABS
	opJeqK    = 0x05 | 0x10 | 0x00 // BPF_JMP | BPF_JEQ | BPF_K
	opJsetK   = 0x05 | 0x40 | 0x00 // BPF_JMP | BPF_JSET | BPF_K
	opRetK    = 0x06 | 0x00        // BPF_RET | BPF_K
	maxInsns  = 4096               // BPF_MAXINSNS
	maxOffset = 255                // jt and jf are u8
)

// Return values of a seccomp filter (linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
	retDataMask    = 0x0000ffff
)

// Offsets into struct seccomp_data { int nr; __u32 arch; __u64
// instruction_pointer; __u64 args[6]; }. Both supported architectures are
// little-endian, so an argument's low 32 bits come first.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLow is the offset of the low 32 bits of argument i.
func argLow(i int) uint32 { return uint32(offArgs + 8*i) }

// encode appends the program as the kernel reads it: an array of struct
// sock_filter in the byte order of amd64 and arm64 (little-endian).
func encode(insns []Instruction) []byte {
	b := make([]byte, 0, len(insns)*instructionSize)
	for _, in := range insns {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}
