package procinit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// The spec's wire format, what the init reads on descriptor 3. The launcher
// does the hard parts (the seccomp program, the rlimit list, the bridge's
// address, the environment's duplicates) so that the C init (cinit_linux.c)
// only checks lengths and applies what it is given:
//
//	magic "ELSPEC01"
//	records, each: tag u32, length u32, payload[length] (little-endian)
//	the last record: wireEnd, length 0, and nothing after it
//
// Strings are bytes without NUL; repeated tags keep their order. A reader
// refuses an unknown tag, a second singular record, a missing path or end,
// and anything past the end.
const wireMagic = "ELSPEC01"

// Record tags. Never renumber: the launcher and the init are the same
// binary today, but a tag's meaning is the format's.
const (
	wireEnd            = 0  // empty; the last record
	wirePath           = 1  // string, exactly once
	wireArg            = 2  // string, repeated: argv[1:]
	wireEnv            = 3  // string, repeated: the whole environment
	wireDir            = 4  // string
	wireRlimit         = 5  // resource u32, 0 u32, value u64: setrlimit, soft = hard
	wireFlags          = 6  // u32, the wireFlag* bits
	wireCred           = 7  // uid u32, gid u32
	wirePrivateTmpSize = 8  // u64, bytes per private tmpfs
	wirePrivateDir     = 9  // string, repeated: PrivateDirs
	wireKeep           = 10 // string, repeated: Spec.Keep, cleaned
	wireSeccomp        = 11 // struct sock_filter[], 1 to 4096 of them
	wireBridgeAddr     = 12 // family u32 (4 or 6), port u32, address [16]byte
	wireBridgeSocket   = 13 // string, shorter than sun_path
)

// Bits of the wireFlags record.
const (
	wireFlagSeccomp         = 1 << 0
	wireFlagDenyUnixSockets = 1 << 1
	wireFlagPrivateTmp      = 1 << 2
	wireFlagLifeline        = 1 << 3
	// wireFlagSweepHost makes the init find descendants by reading every
	// process of /proc, as on a kernel without /proc/PID/task/TID/children;
	// tests set it (Spec.sweepHost) to keep that path checked.
	wireFlagSweepHost = 1 << 4
)

// Bounds the init enforces as well.
const (
	maxWireBytes    = 16 << 20 // the whole spec
	maxSeccompInsns = 4096     // BPF_MAXINSNS
	defaultTmpBytes = 64 << 20
)

// encodeSpec renders spec, checked by validate, in the wire format.
// filter is the seccomp program (Filter.Bytes) when spec.Seccomp is set.
func encodeSpec(spec Spec, filter []byte) ([]byte, error) {
	env, err := dedupEnv(spec.Env)
	if err != nil {
		return nil, err
	}
	var w wireWriter
	w.b = append(w.b, wireMagic...)
	w.str(wirePath, spec.Path)
	for _, a := range spec.Args {
		w.str(wireArg, a)
	}
	for _, kv := range env {
		w.str(wireEnv, kv)
	}
	if spec.Dir != "" {
		w.str(wireDir, spec.Dir)
	}
	for _, r := range spec.Limits.rlimits() {
		p := binary.LittleEndian.AppendUint32(nil, uint32(r.Resource))
		p = binary.LittleEndian.AppendUint32(p, 0)
		w.record(wireRlimit, binary.LittleEndian.AppendUint64(p, r.Value))
	}
	var flags uint32
	for bit, on := range map[uint32]bool{
		wireFlagSeccomp: spec.Seccomp, wireFlagDenyUnixSockets: spec.DenyUnixSockets,
		wireFlagPrivateTmp: spec.PrivateTmp, wireFlagLifeline: spec.Lifeline, wireFlagSweepHost: spec.sweepHost,
	} {
		if on {
			flags |= bit
		}
	}
	w.record(wireFlags, binary.LittleEndian.AppendUint32(nil, flags))
	if spec.UID != 0 || spec.GID != 0 {
		w.record(wireCred, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, spec.UID), spec.GID))
	}
	if spec.PrivateTmp {
		size := spec.PrivateTmpBytes
		if size == 0 {
			size = defaultTmpBytes
		}
		w.record(wirePrivateTmpSize, binary.LittleEndian.AppendUint64(nil, size))
		for _, d := range PrivateDirs {
			w.str(wirePrivateDir, d)
		}
		for _, k := range spec.Keep {
			w.str(wireKeep, filepath.Clean(k))
		}
	}
	if spec.Seccomp {
		if len(filter) == 0 || len(filter)%8 != 0 || len(filter)/8 > maxSeccompInsns {
			return nil, fmt.Errorf("%w: seccomp program of %d bytes", ErrInvalidSpec, len(filter))
		}
		w.record(wireSeccomp, filter)
	}
	if b := spec.Bridge; b != nil {
		ap := netip.MustParseAddrPort(b.Listen) // validate parsed it
		p := make([]byte, 8, 24)
		binary.LittleEndian.PutUint32(p, 4)
		if !ap.Addr().Unmap().Is4() {
			binary.LittleEndian.PutUint32(p, 6)
		}
		binary.LittleEndian.PutUint32(p[4:], uint32(ap.Port()))
		a16 := ap.Addr().Unmap().As16()
		if ap.Addr().Unmap().Is4() {
			a4 := ap.Addr().Unmap().As4()
			a16 = [16]byte{}
			copy(a16[:], a4[:])
		}
		w.record(wireBridgeAddr, append(p, a16[:]...))
		w.str(wireBridgeSocket, b.Socket)
	}
	w.record(wireEnd, nil)
	if len(w.b) > maxWireBytes {
		return nil, fmt.Errorf("%w: %d bytes encoded, more than %d", ErrInvalidSpec, len(w.b), maxWireBytes)
	}
	return w.b, nil
}

type wireWriter struct{ b []byte }

func (w *wireWriter) record(tag uint32, payload []byte) {
	w.b = binary.LittleEndian.AppendUint32(w.b, tag)
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(payload)))
	w.b = append(w.b, payload...)
}

func (w *wireWriter) str(tag uint32, s string) { w.record(tag, []byte(s)) }

// dedupEnv keeps the last of each NAME=, in the order of those last
// occurrences, as os/exec does when it starts a process.
func dedupEnv(env []string) ([]string, error) {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, kv)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// errWire is wrapped by decodeSpec's errors.
var errWire = errors.New("malformed spec")

// decodeSpec reads the wire format back into a Spec (the Go init's way in,
// and the tests'). The seccomp program is checked for shape and dropped:
// the Go init builds its filter from the flags.
func decodeSpec(data []byte) (Spec, error) {
	var s Spec
	if !bytes.HasPrefix(data, []byte(wireMagic)) {
		return s, fmt.Errorf("%w: no magic", errWire)
	}
	data = data[len(wireMagic):]
	seen := map[uint32]bool{}
	var addr []byte
	for {
		if len(data) < 8 {
			return s, fmt.Errorf("%w: truncated record header", errWire)
		}
		tag, n := binary.LittleEndian.Uint32(data), binary.LittleEndian.Uint32(data[4:])
		data = data[8:]
		if uint64(n) > uint64(len(data)) {
			return s, fmt.Errorf("%w: record %d of %d bytes, %d left", errWire, tag, n, len(data))
		}
		p := data[:n]
		data = data[n:]
		switch tag {
		case wirePath, wireDir, wireFlags, wireCred, wirePrivateTmpSize, wireSeccomp, wireBridgeAddr, wireBridgeSocket:
			if seen[tag] {
				return s, fmt.Errorf("%w: record %d twice", errWire, tag)
			}
			seen[tag] = true
		}
		if err := s.decodeRecord(tag, p, &addr); err != nil {
			return s, err
		}
		if tag == wireEnd {
			break
		}
	}
	if len(data) != 0 {
		return s, fmt.Errorf("%w: %d bytes after the end", errWire, len(data))
	}
	if !seen[wirePath] {
		return s, fmt.Errorf("%w: no path", errWire)
	}
	if s.Seccomp != seen[wireSeccomp] {
		return s, fmt.Errorf("%w: the seccomp flag and program disagree", errWire)
	}
	if (addr == nil) != !seen[wireBridgeSocket] {
		return s, fmt.Errorf("%w: half a bridge", errWire)
	}
	if addr != nil {
		s.Bridge.Listen = bridgeListen(addr)
	}
	return s, s.validate()
}

func (s *Spec) decodeRecord(tag uint32, p []byte, addr *[]byte) error {
	str := func(dst *string) error {
		if bytes.IndexByte(p, 0) >= 0 {
			return fmt.Errorf("%w: NUL in record %d", errWire, tag)
		}
		*dst = string(p)
		return nil
	}
	fixed := func(n int) error {
		if len(p) != n {
			return fmt.Errorf("%w: record %d of %d bytes, want %d", errWire, tag, len(p), n)
		}
		return nil
	}
	var v string
	switch tag {
	case wireEnd:
		return fixed(0)
	case wirePath:
		return str(&s.Path)
	case wireDir:
		return str(&s.Dir)
	case wireArg, wireEnv, wirePrivateDir, wireKeep:
		if err := str(&v); err != nil {
			return err
		}
		switch tag {
		case wireArg:
			s.Args = append(s.Args, v)
		case wireEnv:
			s.Env = append(s.Env, v)
		case wireKeep:
			s.Keep = append(s.Keep, v)
		}
	case wireRlimit:
		if err := fixed(16); err != nil {
			return err
		}
		s.Limits.set(int(binary.LittleEndian.Uint32(p)), binary.LittleEndian.Uint64(p[8:]))
	case wireFlags:
		if err := fixed(4); err != nil {
			return err
		}
		f := binary.LittleEndian.Uint32(p)
		s.Seccomp, s.DenyUnixSockets = f&wireFlagSeccomp != 0, f&wireFlagDenyUnixSockets != 0
		s.PrivateTmp, s.Lifeline, s.sweepHost = f&wireFlagPrivateTmp != 0, f&wireFlagLifeline != 0, f&wireFlagSweepHost != 0
	case wireCred:
		if err := fixed(8); err != nil {
			return err
		}
		s.UID, s.GID = binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
	case wirePrivateTmpSize:
		if err := fixed(8); err != nil {
			return err
		}
		s.PrivateTmpBytes = binary.LittleEndian.Uint64(p)
	case wireSeccomp:
		if len(p) == 0 || len(p)%8 != 0 || len(p)/8 > maxSeccompInsns {
			return fmt.Errorf("%w: seccomp program of %d bytes", errWire, len(p))
		}
	case wireBridgeAddr:
		if err := fixed(24); err != nil {
			return err
		}
		if f := binary.LittleEndian.Uint32(p); (f != 4 && f != 6) || binary.LittleEndian.Uint32(p[4:]) > 0xffff {
			return fmt.Errorf("%w: bridge address", errWire)
		}
		*addr = p
	case wireBridgeSocket:
		s.Bridge = &Bridge{}
		if len(p) > maxSocketPath {
			return fmt.Errorf("%w: bridge socket path of %d bytes", errWire, len(p))
		}
		return str(&s.Bridge.Socket)
	default:
		return fmt.Errorf("%w: unknown record %d", errWire, tag)
	}
	return nil
}

// bridgeListen renders a wireBridgeAddr payload as IP:port.
func bridgeListen(p []byte) string {
	port := uint16(binary.LittleEndian.Uint32(p[4:]))
	if binary.LittleEndian.Uint32(p) == 4 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(p[8:12])), port).String()
	}
	return netip.AddrPortFrom(netip.AddrFrom16([16]byte(p[8:24])), port).String()
}
