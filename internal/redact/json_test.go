package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	r := New(Options{})
	if err := r.AddSecret("sekrit-value"); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{`{"password":"hunter2","user":"bob"}`, `{"password":"<redacted>","user":"bob"}`},
		{`{"Authorization":"Bearer abc","n":1}`, `{"Authorization":"<redacted>","n":1}`},
		{`{"token":{"a":1,"b":[2]}}`, `{"token":"<redacted>"}`},
		{`{"token":12345}`, `{"token":"<redacted>"}`},
		{`{"token":null,"secret":false,"api_key":""}`, `{"token":null,"secret":false,"api_key":""}`},
		{`{"nested":{"deeper":[{"clientSecret":"x"}]}}`, `{"nested":{"deeper":[{"clientSecret":"<redacted>"}]}}`},
		{`{"tokenizer":"bpe","sessions":["a"],"keyboard":"us"}`, `{"tokenizer":"bpe","sessions":["a"],"keyboard":"us"}`},
		{`{"log":"password=hunter2 ok"}`, `{"log":"password=<redacted> ok"}`},
		{`{"url":"https://u:p@h/x?token=t"}`, `{"url":"https://h/x?token=<redacted>"}`},
		{`{"msg":"got sekrit-value"}`, `{"msg":"got <redacted>"}`},
		{`{"sekrit-value":1}`, `{"<redacted>":1}`},
		{`["a", "sekrit-value", 3]`, `["a","<redacted>",3]`},
		{`{"z":1,"a":2}`, `{"z":1,"a":2}`},
		{`{"big":12345678901234567890123}`, `{"big":12345678901234567890123}`},
		{`"just a string"`, `"just a string"`},
		{` 42 `, `42`},
		{`{"esc":"a\"b\\c\n\u0001<>&\u2028"}`, `{"esc":"a\"b\\c\n\u0001<>&\u2028"}`},
		// not JSON: redacted as text, returned as a JSON string
		{`{"password": "x"`, `"{\"password\": \"<redacted>\""`},
		{`{"a":1} trailing`, `"{\"a\":1} trailing"`},
		{``, `""`},
	}
	for _, c := range cases {
		got := string(r.JSON(json.RawMessage(c.in)))
		if got != c.want {
			t.Errorf("JSON(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("JSON(%s) = %s is not valid JSON", c.in, got)
		}
	}
}

func TestJSONInvalidUTF8AndDepth(t *testing.T) {
	r := New(Options{})
	out := r.JSON(json.RawMessage("{\"a\":\"\xff\"}"))
	if !json.Valid(out) {
		t.Fatalf("invalid output %q", out)
	}
	deep := strings.Repeat("[", maxJSONDepth+5) + strings.Repeat("]", maxJSONDepth+5)
	if out := r.JSON(json.RawMessage(deep)); !json.Valid(out) {
		t.Fatal("deep input gave invalid output")
	}
}
