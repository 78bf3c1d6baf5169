package seccomp

import (
	"testing"

	"github.com/execledger/execledger/internal/golden"
)

// TestDisassemblyGolden pins the programs so that any change to them shows
// up in review as a diff of testdata/.
func TestDisassemblyGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		goarch string
		opts   Options
	}{
		{"filter_amd64.golden", "amd64", Options{}},
		{"filter_arm64.golden", "arm64", Options{}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			f, err := BuildFor(c.goarch, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, c.golden, []byte(f.Disassemble()))
		})
	}
}
