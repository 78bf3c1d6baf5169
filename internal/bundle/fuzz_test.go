package bundle

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fuzzSeeds are lines a reader must refuse or read with care, beside the
// lines of a real bundle.
var fuzzSeeds = []string{
	``, `{}`, `[]`, `null`, `{"kind":"event"}`, `{"kind":"end","events":0,"checkpoints":0}`,
	`{"kind":"event","leaf":1,}`, `{"kind":"event","leaf":01}`, `{"kind":"event","leaf":1.0}`, `{"kind":"event","leaf":-0}`,
	`{"kind":"event","version":-0}`, `{"kind":"event","leaf":18446744073709551616}`, `{"Kind":"event"}`,
	`{"kind":"event","kind":"end","events":1,"checkpoints":2}`, `{"kind":"event","payload":"\ud83d\ude00"}`,
	`{"kind":"event","payload":"\ud800"}`, "{\"kind\":\"event\",\"payload\":\"\xff\"}", `{"kind":"event","payload":"a\u0000b\/"}`,
	`{"kind":"event","leaf_hash":"AAAA\nAAAA"}`, `{"kind":"event","leaf":1} x`, `{"kind":"checkpoint","size":1,"root":"","note":"x"}`,
	`{"kind":"range","begin":0,"end":1,"size":1,"left":null,"right":[]}`,
}

// FuzzParseRecord checks the line parser: the fast event decoder reads a
// line exactly as encoding/json does or leaves it to it, a record it
// accepts writes back to a line that reads the same, and the verifier
// takes it without panicking.
func FuzzParseRecord(f *testing.F) {
	l := newTestLog(f, 3)
	r := l.newRequest()
	l.record([]*testRequest{r}, 1, 3)
	lines := splitLines(l.full())
	for _, s := range lines {
		f.Add([]byte(s))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	header, err := ParseRecord([]byte(lines[0]))
	if err != nil {
		f.Fatal(err)
	}
	keys := l.keys()
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast line
		if parseEventLine(b, &fast) {
			var slow line
			if err := json.Unmarshal(b, &slow); err != nil {
				t.Fatalf("the fast decoder reads %q, encoding/json refuses it: %v", b, err)
			}
			fr, ferr := fast.event()
			sr, serr := slow.event()
			if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
				t.Fatalf("%q: fast decoder: %v, encoding/json: %v", b, ferr, serr)
			}
			if ferr == nil && !bytes.Equal(lineOf1(t, fr), lineOf1(t, sr)) {
				t.Fatalf("%q: fast decoder reads\n%s\nencoding/json\n%s", b, lineOf1(t, fr), lineOf1(t, sr))
			}
		}
		rec, err := ParseRecord(b)
		if err != nil {
			return
		}
		written := lineOf1(t, rec)
		again, err := ParseRecord(written)
		if err != nil {
			t.Fatalf("%q: the line written back does not read: %v\n%s", b, err, written)
		}
		if w := lineOf1(t, again); !bytes.Equal(w, written) {
			t.Fatalf("%q: does not round-trip:\n%s\n%s", b, written, w)
		}
		v, err := NewVerifier(keys)
		if err != nil {
			t.Fatal(err)
		}
		v.Feed(header)
		v.Feed(rec)
		v.Report()
	})
}

// lineOf1 is r's line.
func lineOf1(t *testing.T, r Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := appendRecord(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
