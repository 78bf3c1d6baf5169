package meter_test

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"

	"github.com/execledger/execledger/internal/wasm/meter"
)

// spin is (module (func (export "spin") (loop (br 0)))).
var spin = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
	0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x07, 0x08, 0x01, 0x04, 0x73, 0x70,
	0x69, 0x6e, 0x00, 0x00, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c,
	0x00, 0x0b, 0x0b,
}

func Example() {
	ctx := context.Background()
	wasm, err := meter.Instrument(spin, meter.Options{})
	if err != nil {
		panic(err)
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		panic(err)
	}

	const budget = 1_000_000
	if err := meter.SetFuel(mod, budget); err != nil {
		panic(err)
	}
	_, callErr := mod.ExportedFunction("spin").Call(ctx)
	left, err := meter.Fuel(mod)
	if err != nil {
		panic(err)
	}
	// A trap with the fuel below zero is the meter's: quota_exceeded.
	fmt.Println("trapped:", callErr != nil)
	fmt.Println("out of fuel:", left < 0)
	fmt.Println("fuel used:", budget-left)
	// Output:
	// trapped: true
	// out of fuel: true
	// fuel used: 1000001
}
