package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func addFuzzSeeds(f *testing.F) {
	for _, in := range writerInputs {
		f.Add([]byte(in), "S3CR3T-VALUE", ">abcd", uint8(3))
	}
	f.Add([]byte(`{"password":"x","a":["S3CR3T",1]}`), "S3CR3T", "ted>hello", uint8(1))
	f.Add([]byte("QQQQhello xyzQQQQ"), "QQQQ", "ted>hello", uint8(2))
	f.Add([]byte("https://u:pw@host/token/x"), "u:pw", "https://host", uint8(5))
	f.Add([]byte("\x00\xff<redacted>\n"), "\xff<re", "d>\n\x00", uint8(0))
}

// FuzzBytes: no added secret survives Bytes or a Writer, whatever the
// input and the chunking; text without any trigger is left unchanged.
func FuzzBytes(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, s1, s2 string, chunk uint8) {
		r := New(Options{})
		var secrets []string
		for _, s := range []string{s1, s2} {
			if r.AddSecret(s) == nil {
				secrets = append(secrets, s)
			}
		}
		out := r.Bytes(data)
		streamed := writeChunks(t, r, string(data), int(chunk)+1)
		for _, s := range secrets {
			if bytes.Contains(out, []byte(s)) {
				t.Fatalf("Bytes(%q) = %q holds secret %q", data, out, s)
			}
			if strings.Contains(streamed, s) {
				t.Fatalf("Writer(%q, chunks of %d) = %q holds secret %q", data, int(chunk)+1, streamed, s)
			}
		}
		if len(secrets) == 0 && !bytes.ContainsAny(data, "=:/") && !bytes.Contains(asciiLower(data), []byte("bearer")) &&
			!bytes.Contains(data, pemBegin) && !bytes.Equal(out, data) {
			t.Fatalf("Bytes changed trigger-free input %q into %q", data, out)
		}
	})
}

// FuzzJSON: the output is valid JSON, and no string, key or number in it
// holds an added secret.
func FuzzJSON(f *testing.F) {
	addFuzzSeeds(f)
	f.Add([]byte(`{"token":{"a":[1,2,{"b":"S3CR3T-VALUE"}]},"n":1.5e3,"t":true}`), "S3CR3T-VALUE", "1.5e3", uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, s1, s2 string, _ uint8) {
		r := New(Options{})
		var secrets []string
		for _, s := range []string{s1, s2} {
			if r.AddSecret(s) == nil {
				secrets = append(secrets, s)
			}
		}
		out := r.JSON(data)
		if !json.Valid(out) {
			t.Fatalf("JSON(%q) = %q is not valid JSON", data, out)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			var text string
			switch v := tok.(type) {
			case string:
				text = v
			case json.Number:
				text = string(v)
			default:
				continue
			}
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Fatalf("JSON(%q) = %q: %q holds secret %q", data, out, text, s)
				}
			}
		}
	})
}
