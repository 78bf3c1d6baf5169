package fdmark

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestAboveStdioMarksInheritedDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A descriptor without close-on-exec, as one inherited from a shell.
	fd, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("dup set close-on-exec already: the test proves nothing")
	}
	if err := AboveStdio(); err != nil {
		t.Fatal(err)
	}
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("descriptor %d is not close-on-exec", fd)
	}
	for std := 0; std <= 2; std++ {
		if flags, err := unix.FcntlInt(uintptr(std), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC != 0 {
			t.Errorf("stdio descriptor %d was marked", std)
		}
	}
}
