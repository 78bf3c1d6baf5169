package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/ledger"
)

// A service submits a tool request and reads it back. The principal is the
// one its login role is mapped to in ledger.principals.
func ExampleClient_Submit() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()

	id, err := client.Submit(ctx, ledger.SubmitParams{
		Tool:           "echo",
		Input:          map[string]any{"text": "hello"},
		RunID:          "run-42",
		IdempotencyKey: "order-1001",
	})
	if err != nil {
		log.Fatal(err)
	}
	// A retry with the same key returns the same request.
	again, err := client.Submit(ctx, ledger.SubmitParams{Tool: "echo", Input: map[string]any{"text": "hello"},
		RunID: "run-42", IdempotencyKey: "order-1001"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := client.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again == id, r.Principal, r.Tool, r.State)
	// Output: true example-service echo pending
}

// Bad input is refused with an error the caller can test for.
func ExampleClient_Submit_invalidInput() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()

	_, err = client.Submit(ctx, ledger.SubmitParams{Tool: "not a tool", Input: map[string]any{}})
	fmt.Println(errors.Is(err, ledger.ErrInvalidInput))
	// Output: true
}

// Await returns when the request is final: here, because it is cancelled.
func ExampleClient_Await() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	client := ledger.NewClient(pool)
	defer client.Close()

	id, err := client.Submit(ctx, ledger.SubmitParams{Tool: "sleep", Input: map[string]any{"ms": 1000}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Cancel(ctx, id, "no longer needed"); err != nil {
		log.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := client.Await(waitCtx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.State, *r.ErrorKind)
	// Output: cancelled cancelled
}

// A reader follows the whole log in its gapless order, resuming from the
// cursor of the last event it handled.
func ExampleStore_ReadAll() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store := ledger.NewStore(pool)

	if _, err := store.Append(ctx, "example:order-7", ledger.NoStream,
		ledger.NewEvent{Type: "example.placed", Payload: map[string]any{"items": 3}},
		ledger.NewEvent{Type: "example.shipped", Payload: map[string]any{}}); err != nil {
		log.Fatal(err)
	}
	// A real reader polls forever (or wakes on NOTIFY); this one stops once
	// it has seen the two events. Delivery waits for every older
	// transaction in the cluster to end, so a poll may come back empty.
	var cursor ledger.Cursor
	for seen := 0; seen < 2; {
		events, err := store.ReadAll(ctx, cursor, 100)
		if err != nil {
			log.Fatal(err)
		}
		if len(events) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		for _, e := range events {
			if e.Stream == "example:order-7" {
				fmt.Println(e.Version, e.Type, e.Verify())
				seen++
			}
			cursor = e.Cursor()
		}
	}
	// Output:
	// 1 example.placed true
	// 2 example.shipped true
}
