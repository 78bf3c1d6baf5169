package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one stdio message, as MaxBodyBytes bounds an HTTP
// one.
const MaxLineBytes = MaxBodyBytes

// lineTransport is newline-delimited JSON-RPC over a reader and a writer.
// Unlike the SDK's IOTransport, which ends the session at the first line
// that does not parse, it answers such a line (and one over MaxLineBytes)
// with a JSON-RPC error and reads on: one bad message never ends a
// session. It stamps tools/call requests (see stamp).
type lineTransport struct {
	in  io.Reader
	out io.Writer
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.out, lines: make(chan []byte), readErr: make(chan error, 1), closed: make(chan struct{})}
	go c.readLines(t.in)
	return c, nil
}

type lineConn struct {
	wmu     sync.Mutex
	out     io.Writer
	lines   chan []byte
	readErr chan error
	once    sync.Once
	closed  chan struct{}
}

var _ mcp.Connection = (*lineConn)(nil)

// readLines sends each line of in, or nil for one over MaxLineBytes,
// until in ends or the connection closes.
func (c *lineConn) readLines(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 || (line == nil && err == nil) {
			select {
			case c.lines <- line:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			c.readErr <- err
			return
		}
	}
}

// readLine reads one line; a line over MaxLineBytes is read to its end
// and returned as nil.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(buf)+len(chunk) > MaxLineBytes {
				over, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			return nil, err
		}
		if buf == nil {
			buf = []byte{}
		}
		return buf, err
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case line := <-c.lines:
			if line == nil {
				c.reply(jsonrpc.CodeInvalidRequest, fmt.Sprintf("message over %d bytes", MaxLineBytes))
				continue
			}
			msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(line))
			if err != nil {
				c.reply(jsonrpc.CodeParseError, "not a JSON-RPC 2.0 message: "+err.Error())
				continue
			}
			return stamp(msg), nil
		case err := <-c.readErr:
			return nil, err
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// reply answers a message that could not be read (id null, as JSON-RPC
// asks when the id cannot be known).
func (c *lineConn) reply(code int64, msg string) {
	m, _ := json.Marshal(msg)
	b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%s}}`+"\n", code, m)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.out.Write(b)
}

func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.out.Write(append(b, '\n'))
	return err
}

func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }
