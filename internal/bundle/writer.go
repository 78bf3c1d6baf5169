package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Writer writes a bundle, one line per call. It stamps the header with
// FormatName and FormatVersion and counts the events and checkpoints for
// the end record; it does not check the order of the records (the
// verifier does). Each record is one Write to the underlying writer: wrap
// a file in a bufio.Writer.
type Writer struct {
	w           io.Writer
	buf         bytes.Buffer
	started     bool
	ended       bool
	events      int64
	checkpoints int64
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Header writes the header, which must come first.
func (w *Writer) Header(h Header) error {
	if w.started {
		return errors.New("bundle: the header must be the first record")
	}
	h.Format, h.Version = FormatName, FormatVersion
	return w.write(&h)
}

// Checkpoint writes a checkpoint record.
func (w *Writer) Checkpoint(c Checkpoint) error {
	if err := w.write(&c); err != nil {
		return err
	}
	w.checkpoints++
	return nil
}

// Consistency writes a consistency proof record.
func (w *Writer) Consistency(c Consistency) error { return w.write(&c) }

// Range writes a range proof record; the events it proves follow it.
func (w *Writer) Range(r Range) error { return w.write(&r) }

// Event writes an event record. It refuses a field that is not valid
// UTF-8, which JSON could not carry exactly.
func (w *Writer) Event(e Event) error {
	if err := w.write(&e); err != nil {
		return err
	}
	w.events++
	return nil
}

// End writes the end record with the number of events and checkpoints
// written. No record may follow it.
func (w *Writer) End() error {
	if err := w.write(&End{Events: w.events, Checkpoints: w.checkpoints}); err != nil {
		return err
	}
	w.ended = true
	return nil
}

func (w *Writer) write(r Record) error {
	if !w.started && r.Kind() != KindHeader {
		return fmt.Errorf("bundle: %s record before the header", r.Kind())
	}
	if w.ended {
		return fmt.Errorf("bundle: %s record after the end", r.Kind())
	}
	w.buf.Reset()
	if err := appendRecord(&w.buf, r); err != nil {
		return fmt.Errorf("bundle: write %s: %w", r.Kind(), err)
	}
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		return fmt.Errorf("bundle: write %s: %w", r.Kind(), err)
	}
	w.started = true
	return nil
}
