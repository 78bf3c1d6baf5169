// Command wasmcache compiles WebAssembly modules into a wazero cache
// directory as serve's tier A compiles them under [wasm]'s defaults
// (wasmrun.Inspect: table bounds, fuel instrumentation for the default
// fuel limit, the engine serve picks), so that a serve on that cache_dir
// finds their machine code instead of compiling them.
//
// It is for tests: under the race detector, which instruments wazero's
// compiler too, compiling a 2 MB Go module takes a minute on an idle
// machine and many on a loaded one; built without it, as `go run` builds
// this, seconds. wazero keys the code by the module's bytes, its own
// version and the CPU's features, so serve gets what its own compile
// would make.
//
//	go run ./testdata/wasmcache -dir DIR MODULE.wasm...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/execledger/execledger/internal/sandbox/wasmrun"
)

func main() {
	dir := flag.String("dir", "", "the wazero cache `DIR` (serve's [wasm] cache_dir)")
	flag.Parse()
	if *dir == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: wasmcache -dir DIR MODULE.wasm...")
		os.Exit(2)
	}
	cfg := wasmrun.Config{Engine: wasmrun.EngineAuto, CacheDir: *dir}
	for _, path := range flag.Args() {
		wasm, err := os.ReadFile(path)
		if err == nil {
			_, err = wasmrun.Inspect(context.Background(), cfg, wasm, "")
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "wasmcache: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}
