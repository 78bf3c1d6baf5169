// Command stdio is a Go skill that only reads stdin and writes stdout:
// Go's wasip1 port links no path_* function into it.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	b, _ := io.ReadAll(os.Stdin)
	fmt.Printf(`{"bytes": %d}`+"\n", len(b))
}
