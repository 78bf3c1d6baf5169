package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// stamp puts a tools/call request's JSON-RPC id into its params' _meta
// under metaRPCID, for the handler's idempotency key. Other messages,
// and a call whose params are not an object, pass unchanged.
func stamp(msg jsonrpc.Message) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() {
		return msg
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || params == nil {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return msg
	}
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return msg
	}
	meta[metaRPCID] = id
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	b, err := json.Marshal(params)
	if err != nil {
		return msg
	}
	req.Params = b
	return req
}

// stampHTTP stamps a POST whose body is one tools/call request. A body
// over max is left for the SDK to refuse (413).
func stampHTTP(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(body)) <= max {
			if msg, err := jsonrpc.DecodeMessage(body); err == nil {
				if stamped, err := jsonrpc.EncodeMessage(stamp(msg)); err == nil {
					body = stamped
				}
			}
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		r.ContentLength = -1
		next.ServeHTTP(w, r)
	})
}
