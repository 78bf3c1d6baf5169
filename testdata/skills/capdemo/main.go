//go:build wasip1

// Command capdemo is a tier A skill written in Go (GOOS=wasip1
// GOARCH=wasm; `make skills` builds it) that uses each capability through
// //go:wasmimport bindings (caps.go). Its input is {"op": ...}:
//
//   - secret: reads the first granted secret and echoes it, which the
//     output shows redacted, with its length;
//   - store: puts {"key", "value"} under the first granted storage prefix
//     and reads it back; recall: reads {"key"};
//   - publish: publishes {"message"} (any JSON) on the first granted
//     channel;
//   - http: sends GET {"url"} through the first granted http host and
//     returns the status.
//
// The output is a JSON object holding "op", "grants" (the number granted
// per class) and the op's results; a capability's error is returned as
// "error" (its name) and "code" (its negative result), not as a failure.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

type request struct {
	Op      string          `json:"op"`
	Key     string          `json:"key"`
	Value   string          `json:"value"`
	Message json.RawMessage `json:"message"`
	URL     string          `json:"url"`
	Grant   int32           `json:"grant"` // which granted http host (index in the sorted grant)
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var req request
	if err := json.Unmarshal(in, &req); err != nil {
		fail("bad input: %v", err)
	}
	out := map[string]any{"op": req.Op, "grants": map[string]int32{"secrets": secretCount(),
		"storage": storageCount(), "channels": channelCount(), "http": httpCount()}}
	ops := map[string]func(request, map[string]any) error{"secret": opSecret, "store": opStore,
		"recall": opRecall, "publish": opPublish, "http": opHTTP}
	op, ok := ops[req.Op]
	if !ok {
		fail("unknown op %q", req.Op)
	}
	if err := op(req, out); err != nil {
		var ce capError
		if !errors.As(err, &ce) {
			fail("%s: %v", req.Op, err)
		}
		out["error"], out["code"] = ce.Error(), int32(ce)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("writing stdout: %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func opSecret(_ request, out map[string]any) error {
	v, err := getSecret(secretHandle(0))
	if err != nil {
		return err
	}
	out["length"], out["secret"] = len(v), string(v)
	return nil
}

func opStore(req request, out map[string]any) error {
	h := storageHandle(0)
	if err := putStorage(h, req.Key, []byte(req.Value)); err != nil {
		return err
	}
	v, err := getStorage(h, req.Key)
	if err != nil {
		return err
	}
	out["value"] = string(v)
	return nil
}

func opRecall(req request, out map[string]any) error {
	v, err := getStorage(storageHandle(0), req.Key)
	if err != nil {
		return err
	}
	out["value"] = string(v)
	return nil
}

func opPublish(req request, out map[string]any) error {
	if err := publish(channelHandle(0), req.Message); err != nil {
		return err
	}
	out["published"] = len(req.Message)
	return nil
}

func opHTTP(req request, out map[string]any) error {
	body, err := json.Marshal(map[string]string{"method": "GET", "url": req.URL})
	if err != nil {
		return err
	}
	resp, err := sendHTTP(httpHandle(req.Grant), body)
	if err != nil {
		return err
	}
	var r struct {
		Status int    `json:"status"`
		Body   []byte `json:"body_base64"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return err
	}
	out["status"], out["body"] = r.Status, string(r.Body)
	return nil
}
