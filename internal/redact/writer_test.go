package redact

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var writerInputs = []string{
	"line one\npassword=hunter2 and more\nlast line without newline",
	"Authorization: Bearer abc.def.ghi\nnext\n",
	"the secret is S3CR3T-VALUE, again S3CR3T-VALUE\n",
	"split secret S3CR3T-\nVALUE across a newline",
	"multi\nline secret: MULTI\nLINE-SECRET end\n",
	"url https://user:pw@example.com/token/abc?token=q\n",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIB\nAAKCAQEA\n-----END RSA PRIVATE KEY-----\nafter\n",
	"no newline at all password=x S3CR3T-VALUE",
	"\x00\xff binary S3CR3T-VALUE \xfe\n",
	"x Authorization: Basic abc def\nAuthorization: Basic abc def\n",
	"a few words then token = abc and Bearer abc123def more words\n",
}

func writerRedactor(t testing.TB) *Redactor {
	r := New(Options{})
	for _, s := range []string{"S3CR3T-VALUE", "MULTI\nLINE-SECRET", "S3CR3T-\nVALUE"} {
		if err := r.AddSecret(s); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// writeChunks writes in through a Writer in the given chunk sizes
// (cycled) and returns what came out.
func writeChunks(t testing.TB, r *Redactor, in string, sizes ...int) string {
	var out bytes.Buffer
	w := NewWriter(&out, r)
	for i, k := 0, 0; i < len(in); k++ {
		n := min(sizes[k%len(sizes)], len(in)-i)
		if m, err := w.Write([]byte(in[i : i+n])); err != nil || m != n {
			t.Fatalf("Write = %d, %v", m, err)
		}
		i += n
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestWriterMatchesBytes: however the stream is split, the Writer gives
// what Bytes gives for the whole.
func TestWriterMatchesBytes(t *testing.T) {
	r := writerRedactor(t)
	for _, in := range writerInputs {
		want := string(r.Bytes([]byte(in)))
		for split := 1; split < len(in); split++ {
			if got := writeChunks(t, r, in, split, len(in)); got != want {
				t.Fatalf("split at %d of %q:\n got %q\nwant %q", split, in, got, want)
			}
		}
		for _, sizes := range [][]int{{1}, {2}, {3, 1}, {7}} {
			if got := writeChunks(t, r, in, sizes...); got != want {
				t.Fatalf("chunks %v of %q:\n got %q\nwant %q", sizes, in, got, want)
			}
		}
	}
}

func TestWriterPassesOnCompleteLines(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, New(Options{}))
	if _, err := w.Write([]byte("done\npartial")); err != nil {
		t.Fatal(err)
	}
	if out.String() != "done\n" {
		t.Fatalf("after a complete line, out = %q", out.String())
	}
	if err := w.Flush(); err != nil || out.String() != "done\npartial" {
		t.Fatalf("after Flush, out = %q, %v", out.String(), err)
	}
}

// TestWriterHoldsOnlyWhatItMust: text is passed on word by word, keeping
// back the last word (a key or "Bearer" may be waiting for its value) and
// the longest secret minus one byte.
func TestWriterHoldsOnlyWhatItMust(t *testing.T) {
	cases := []struct {
		secret string
		writes []string
		after  []string // out after each write
	}{
		{"", []string{"hello world and more", " text"}, []string{"hello world ", "hello world and "}},
		{"", []string{"password ", "= hunter2 ", "ok "}, []string{"", "", "password = <redacted> "}},
		{"", []string{"Bearer ", "abc123def ", "x "}, []string{"", "", "Bearer <redacted> "}},
		{"", []string{"Authorization: Basic ", "dXNlcjpw", "YXNz\n"}, []string{"", "", "Authorization: <redacted>\n"}},
		// The longest pattern is base64 of the secret, 16 bytes: 15 held.
		{"S3CR3T-VALUE", []string{"see S3CR3T-VA", "LUE now and then again and again "}, []string{"", "see <redacted> now and "}},
	}
	for _, c := range cases {
		r := New(Options{})
		if c.secret != "" {
			must(t, r.AddSecret(c.secret))
		}
		var out bytes.Buffer
		w := NewWriter(&out, r)
		for i, s := range c.writes {
			if _, err := w.Write([]byte(s)); err != nil {
				t.Fatal(err)
			}
			if out.String() != c.after[i] {
				t.Errorf("%q: after write %d out = %q, want %q", c.writes, i, out.String(), c.after[i])
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriterLongLine(t *testing.T) {
	r := writerRedactor(t)
	in := strings.Repeat("word ", maxPending/5+100) + "S3CR3T-VALUE " + strings.Repeat("x", 10)
	var out bytes.Buffer
	w := NewWriter(&out, r)
	for i := 0; i < len(in); i += 1000 {
		if _, err := w.Write([]byte(in[i:min(i+1000, len(in))])); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() == 0 {
		t.Fatal("a line longer than the buffer was held entirely")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "S3CR3T-VALUE") || !strings.Contains(out.String(), Marker) {
		t.Fatalf("secret in a long line not redacted")
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterStickyError(t *testing.T) {
	fw := &failWriter{}
	w := NewWriter(fw, New(Options{}))
	if _, err := w.Write([]byte("a\n")); err == nil {
		t.Fatal("no error from a failing writer")
	}
	if _, err := w.Write([]byte("b\n")); err == nil || fw.n != 1 {
		t.Fatalf("error not sticky: %v, %d writes", err, fw.n)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close hid the error")
	}
}
