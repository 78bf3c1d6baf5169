package redact

import "testing"

// TestStringHeuristics checks both directions: what must be redacted and
// what must be left alone (Palyra's gap #12).
func TestStringHeuristics(t *testing.T) {
	cases := []struct{ in, want string }{
		// key=value and friends
		{"password=hunter2", "password=<redacted>"},
		{"PASSWORD=hunter2 next", "PASSWORD=<redacted> next"},
		{"db_password = s3cret;", "db_password = <redacted>;"},
		{"GITHUB_TOKEN=ghp_abc123", "GITHUB_TOKEN=<redacted>"},
		{"AWS_SECRET_ACCESS_KEY=wJalr/K7MDENG", "AWS_SECRET_ACCESS_KEY=<redacted>"},
		{"client_secret:abc user=bob", "client_secret:<redacted> user=bob"},
		{`{"api_key": "k-123", "name": "x"}`, `{"api_key": "<redacted>", "name": "x"}`},
		{`'refresh_token': 'r t'`, `'refresh_token': '<redacted>'`},
		{`{"accessToken":"abc"}`, `{"accessToken":"<redacted>"}`},
		{`log: {\"password\":\"pw\"}`, `log: {\"password\":\"<redacted>\"}`},
		{":password => 'x'", ":password => '<redacted>'"},
		{"--token=abc", "--token=<redacted>"},
		{"vault_ref=vault://kv/x", "vault_ref=<redacted>"},
		{"x-amz-security-token=FQo", "x-amz-security-token=<redacted>"},
		{"x_goog_api_client=1", "x_goog_api_client=<redacted>"},
		{"signature=abc&x=1", "signature=<redacted>&x=1"},
		{"session=abc", "session=<redacted>"},
		{"private_key=MIIE", "private_key=<redacted>"},
		{"spring.datasource.password=pw", "spring.datasource.password=<redacted>"},
		// header and YAML lines lose the rest of the line
		{"Authorization: Basic dXNlcjpwYXNz\nHost: x", "Authorization: <redacted>\nHost: x"},
		{"Cookie: a=1; b=2\r\n", "Cookie: <redacted>\r\n"},
		{"> Set-Cookie: sid=1; Path=/", "> Set-Cookie: <redacted>"},
		{"X-Api-Key: k1 k2", "X-Api-Key: <redacted>"},
		{"  password: two words", "  password: <redacted>"},
		// inline: one value, plus the credential after a scheme
		{"curl -H 'Authorization: Bearer abc.def' x", "curl -H 'Authorization: <redacted>' x"},
		{"auth: ok, authorization=Basic dXNl rest", "auth: ok, authorization=<redacted> rest"},
		// Bearer
		{"header Bearer eyJhbGciOi.x.y done", "header Bearer <redacted> done"},
		{"bearer abc123def", "bearer <redacted>"},
		// URLs
		{"https://user:pass@example.com/x", "https://example.com/x"},
		{"git clone https://oauth2:tok@git.example/r.git", "git clone https://git.example/r.git"},
		{"https://h/p?token=abc&x=1", "https://h/p?token=<redacted>&x=1"},
		{"https://h/cb#access_token=abc&state=s", "https://h/cb#access_token=<redacted>&state=s"},
		{"https://h/p?api%5Fkey=abc", "https://h/p?api%5Fkey=<redacted>"},
		// path segments
		{"GET /api/token/abc123/info", "GET /api/token/<redacted>/info"},
		{"https://h/v1/secret/s1?x=1", "https://h/v1/secret/<redacted>?x=1"},
		{"/session/xyz", "/session/<redacted>"},
		{"/KEY/abc", "/KEY/<redacted>"},
		// PEM
		{"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\n<redacted>\n-----END PRIVATE KEY-----"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl", "-----BEGIN OPENSSH PRIVATE KEY-----\n<redacted>"},

		// left alone
		{"tokenizer=bpe", "tokenizer=bpe"},
		{"sessions list", "sessions list"},
		{"keyboard: us", "keyboard: us"},
		{"token_count=42 max_tokens: 100", "token_count=42 max_tokens: 100"},
		{"passwords list", "passwords list"},
		{"cookies=3 signatures: 2", "cookies=3 signatures: 2"},
		{"secretary: alice", "secretary: alice"},
		{"author=bob", "author=bob"},
		{"x_amzn_trace_id=1", "x_amzn_trace_id=1"},
		{"the bearer of bad news", "the bearer of bad news"},
		{"use a Bearer token here", "use a Bearer token here"},
		{"https://example.com/tokens/list", "https://example.com/tokens/list"},
		{"/usr/share/keyboard/layout", "/usr/share/keyboard/layout"},
		{"https://example.com/a?page=2#top", "https://example.com/a?page=2#top"},
		{"if token == expected", "if token == expected"},
		{"token != nil", "token != nil"},
		{"ipv6 ::1 token::x", "ipv6 ::1 token::x"},
		{"password=", "password="},
		{"password=<redacted>", "password=<redacted>"},
		{"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
		{"", ""},
	}
	r := New(Options{})
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestExtraKeys(t *testing.T) {
	r := New(Options{ExtraKeys: []string{"X-Internal-Auth"}})
	if got := r.String("x_internal_auth=abc"); got != "x_internal_auth=<redacted>" {
		t.Errorf("extra key not redacted: %q", got)
	}
	if got := New(Options{}).String("x_internal_auth=abc"); got != "x_internal_auth=abc" {
		t.Errorf("extra key redacted without the option: %q", got)
	}
}

// TestBinarySafe: arbitrary bytes around a redaction survive unchanged.
func TestBinarySafe(t *testing.T) {
	r := New(Options{})
	in := "\xff\x00\x01é\xfe password=hunter2\x00tail\xc3"
	want := "\xff\x00\x01é\xfe password=<redacted>\x00tail\xc3"
	if got := r.String(in); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := r.String("\xff\xfe\x00\x7f"); got != "\xff\xfe\x00\x7f" {
		t.Fatalf("binary changed: %q", got)
	}
}

func TestIdempotent(t *testing.T) {
	r := New(Options{})
	for _, s := range []string{
		"password=hunter2 Authorization: Bearer abcdef12",
		"Authorization: Basic x\n",
		"https://u:p@h/token/abc?secret=1#token=2",
		`{"password":"x","n":{"token":"y"}}`,
	} {
		once := r.String(s)
		if twice := r.String(once); twice != once {
			t.Errorf("not idempotent: %q -> %q -> %q", s, once, twice)
		}
	}
}
