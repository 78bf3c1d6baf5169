package redact

import (
	"bytes"
	"io"
)

// maxPending is how much a Writer holds, at most, waiting for a blank.
const maxPending = 64 << 10

// A Writer redacts a stream, such as a process's output, before passing
// it on. It holds back what it cannot yet judge: the longest added secret
// minus one byte (a secret may be split across writes), the last word and
// what follows it (a key may be waiting for its value), and anything a
// value, URL or private key still open at the end of the buffer began
// with. Without a blank or line end in 64 KiB it cuts anyway; a value
// longer than that may then be redacted only in part.
//
// Add secrets before writing: one added later is not looked for in what
// was already passed on. Writer is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	r   *Redactor
	buf []byte
	err error
	// midLine: what was passed on so far does not end a line.
	midLine bool
}

// NewWriter returns a Writer redacting with r into w.
func NewWriter(w io.Writer, r *Redactor) *Writer {
	return &Writer{w: w, r: r}
}

// Write buffers p and passes on what can be judged. An error from the
// underlying writer is returned by this and every later call.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	if cut := w.cut(); cut > 0 {
		if err := w.emit(cut); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush redacts and passes on everything buffered, giving up the look-ahead:
// a secret split across the flush point is not recognised.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	return w.emit(len(w.buf))
}

// Close flushes. It does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }

func (w *Writer) emit(cut int) error {
	if cut == 0 {
		return nil
	}
	out := w.r.redact(w.buf[:cut], w.midLine)
	w.midLine = w.buf[cut-1] != '\n'
	w.buf = append(w.buf[:0], w.buf[cut:]...)
	if _, err := w.w.Write(out); err != nil {
		w.err = err
		return err
	}
	return nil
}

// cut returns how many buffered bytes can be redacted and passed on now:
// up to the last line end, or the start of the last complete word (which
// may be a key, or "Bearer", still waiting for its value), but never into
// the last longest-secret-minus-one bytes, and never between a match and
// the text that identified it.
func (w *Writer) cut() int {
	pats := w.r.secretPatterns()
	hold := 0
	for _, p := range pats {
		hold = max(hold, len(p)-1)
	}
	limit := len(w.buf) - hold
	if limit <= 0 {
		return 0
	}
	cut := max(bytes.LastIndexByte(w.buf[:limit], '\n')+1, lastWordStart(w.buf[:limit]))
	full := len(w.buf) >= max(maxPending, 4*hold)
	if cut == 0 && !full {
		return 0
	}
	spans := w.r.scan(w.buf, pats, w.midLine)
	if c := backOff(spans, cut); c > 0 || !full {
		return c
	}
	// The buffer is full and nothing can be passed on whole: cut anyway,
	// past complete matches.
	if cut == 0 {
		cut = limit
	}
	return forwardPast(spans, cut)
}

// lastWordStart returns where the word before the last blank in p starts
// (0 if there is none): everything before it is complete.
func lastWordStart(p []byte) int {
	b := bytes.LastIndexAny(p, " \t")
	if b < 0 {
		return 0
	}
	for b > 0 && (p[b-1] == ' ' || p[b-1] == '\t') {
		b--
	}
	for b > 0 && p[b-1] > ' ' {
		b--
	}
	return b
}

// splits reports a span that cutting at cut would separate from its
// context. Zero-width spans count too: they mark text still to come (open)
// or, for private keys, the END line.
func splits(s span, cut int) bool {
	return s.ctx < cut && (cut < s.end || s.open && cut <= s.end)
}

// backOff moves cut back to the context of every span it would split.
func backOff(spans []span, cut int) int {
	for moved := true; moved && cut > 0; {
		moved = false
		for _, s := range spans {
			if splits(s, cut) {
				cut, moved = s.ctx, true
			}
		}
	}
	return cut
}

// forwardPast moves cut past every complete span it would split; used when
// the buffer is full and backing off leaves nothing to pass on.
func forwardPast(spans []span, cut int) int {
	for moved := true; moved; {
		moved = false
		for _, s := range spans {
			if !s.open && s.ctx < cut && cut < s.end {
				cut, moved = s.end, true
			}
		}
	}
	return cut
}
