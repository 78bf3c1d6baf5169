package redact

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestAddSecret(t *testing.T) {
	cases := []struct {
		secret string
		err    error
	}{
		{"hunter22", nil},
		{"abcd", nil},
		{"abc", ErrSecretTooShort},
		{"", ErrSecretTooShort},
		{"redacted", ErrSecretUnredactable},   // the marker spells it
		{"d><re", ErrSecretUnredactable},      // so does a run of markers
		{"<redacted>", ErrSecretUnredactable}, // the marker itself
		{">abcd", nil},                        // core "abcd"
		{">abc", ErrSecretUnredactable},       // core "abc" too short
		{"xy<redacted>zzzz", nil},             // core "zzzz"
		{"pa ss\nw\x00rd\xff", nil},           // any bytes
	}
	for _, c := range cases {
		r := New(Options{})
		if err := r.AddSecret(c.secret); !errors.Is(err, c.err) {
			t.Errorf("AddSecret(%q) = %v, want %v", c.secret, err, c.err)
		}
	}
	r := New(Options{MinSecretLength: 8})
	if err := r.AddSecret("hunter2"); !errors.Is(err, ErrSecretTooShort) {
		t.Errorf("MinSecretLength not honoured: %v", err)
	}
}

func TestSecretReplacedEverywhere(t *testing.T) {
	const s = `s3cr3t/va"lue+`
	r := New(Options{})
	if err := r.AddSecret(s); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		"plain " + s + " text",
		s + s,
		"in json: " + jsonEscape(s),
		"in a query: ?q=" + url.QueryEscape(s),
		"in a path: /x/" + url.PathEscape(s),
		"base64: " + base64.StdEncoding.EncodeToString([]byte(s)),
		"base64url: " + base64.RawURLEncoding.EncodeToString([]byte(s)),
		"binary\x00\xff" + s + "\xfe",
	} {
		out := r.String(in)
		for _, form := range []string{s, jsonEscape(s), url.QueryEscape(s), base64.RawStdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(out, form) {
				t.Errorf("String(%q) = %q still holds %q", in, out, form)
			}
		}
		if !strings.Contains(out, Marker) {
			t.Errorf("String(%q) = %q has no marker", in, out)
		}
	}
}

// TestSecretMeetingMarker: replacing one secret must not spell another
// next to the marker, however the secrets overlap it.
func TestSecretMeetingMarker(t *testing.T) {
	cases := []struct {
		secrets []string
		in      string
	}{
		{[]string{"QQQQ", "ted>hello"}, "QQQQhello"},
		{[]string{"QQQQ", "wxyz<red"}, "wxyzQQQQ"},
		{[]string{"password", ">abcd"}, "password=zzzzabcd"},
		{[]string{"AAAA", "d>d>d>wxyz"}, "AAAAd>d>wxyz"},
		{[]string{"u:pw", "https://host"}, "https://u:pw@host/"}, // dropping userinfo joins text
		{[]string{"https://h/x"}, "https://user@h/x"},            // ditto, heuristics only
	}
	for _, c := range cases {
		r := New(Options{})
		for _, s := range c.secrets {
			if err := r.AddSecret(s); err != nil {
				t.Fatalf("AddSecret(%q): %v", s, err)
			}
		}
		out := r.String(c.in)
		for _, s := range c.secrets {
			if strings.Contains(out, s) {
				t.Errorf("%q with %q: output %q holds %q", c.in, c.secrets, out, s)
			}
		}
	}
}

func TestCore(t *testing.T) {
	cases := map[string]string{
		"abcd": "abcd", ">abcd": "abcd", "abcd<r": "abcd", "ed>abcd<re": "abcd",
		"ab<redacted>cdef": "cdef", ">>abcd": "abcd",
	}
	for in, want := range cases {
		if got, ok := core(in); !ok || got != want {
			t.Errorf("core(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"redacted", "<red", "acted>", "d><r", ">"} {
		if got, ok := core(in); ok {
			t.Errorf("core(%q) = %q, want none", in, got)
		}
	}
}
