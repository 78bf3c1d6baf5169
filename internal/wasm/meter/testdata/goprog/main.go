// Command goprog is a small Go program built for GOOS=wasip1 GOARCH=wasm by
// the meter tests, to show that the instrumenter handles the Go compiler's
// output: the runtime, the scheduler, the garbage collector, maps,
// interfaces, closures and the standard library.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"
)

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func main() {
	words := strings.Fields("the quick brown fox jumps over the lazy dog the end")
	counts := map[string]int{}
	for _, w := range words {
		counts[w]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s=%d ", k, counts[k])
	}
	fmt.Println()

	results := make(chan int)
	for i := 20; i < 24; i++ {
		go func(n int) { results <- fib(n) }(i)
	}
	sum := 0
	for range 4 {
		sum += <-results
	}
	fmt.Println("fib sum", sum)

	var garbage [][]byte
	for i := range 200 {
		garbage = append(garbage, make([]byte, 64<<10))
		garbage[len(garbage)-1][i] = byte(i)
		if len(garbage) > 16 {
			garbage = garbage[1:]
		}
	}
	fmt.Printf("sha256 %x\n", sha256.Sum256([]byte(strings.Repeat("execledger", 1000))))
	fmt.Fprintln(os.Stderr, "args", os.Args[1:])
}
