package bwrap

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// newMemfd returns a sealed, read-only-content memfd holding data, at
// offset 0, for bwrap to read from a descriptor.
func newMemfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("bwrap-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd for %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), "memfd:bwrap-"+name)
	if err := fillAndSeal(f, data); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd for %s: %w", name, err)
	}
	return f, nil
}

func fillAndSeal(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}
