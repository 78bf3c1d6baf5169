// Command files is a Go skill that reads a file: Go's wasip1 port links
// path_open into it, which the audit refuses.
package main

import (
	"fmt"
	"os"
)

func main() {
	b, err := os.ReadFile("config.json")
	fmt.Println(len(b), err)
}
