package redact

import "testing"

func TestNormalizeKey(t *testing.T) {
	cases := map[string]string{
		"password": "password", "X-Api-Key": "x_api_key", "accessToken": "access_token", "APIKey": "api_key",
		"db.password": "db_password", "--token": "token", `"Set-Cookie"`: "set_cookie", "AWS_SECRET": "aws_secret",
		"XAmzDate": "x_amz_date", "tokenizer": "tokenizer",
	}
	for in, want := range cases {
		if got := normalizeKey(in); got != want {
			t.Errorf("normalizeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsSensitiveKey(t *testing.T) {
	r := New(Options{})
	sensitive := []string{
		// Palyra's list, in the spellings it normalises from
		"access_token", "api-key", "apikey", "Authorization", "bearer", "client_secret", "Cookie", "credential",
		"password", "private_key", "refresh_token", "secret", "session", "Set-Cookie", "signature", "token",
		"vault_ref", "X-Amz-Security-Token", "x-goog-api-key",
		// words and suffixes
		"DB_PASSWORD", "aws_secret_access_key", "smtp_credentials", "GITHUB_TOKEN", "proxy-authorization",
		"stripe_api_key_live", "accessToken", "sessionId", "JSESSIONID", "passphrase",
	}
	plain := []string{
		"tokenizer", "token_count", "max_tokens", "sessions", "session_count", "keyboard", "key", "monkey",
		"passwords", "cookies", "signatures", "secretary", "author", "x_amzn_trace_id", "user", "", "-",
	}
	for _, k := range sensitive {
		if !r.isSensitiveKey(k) {
			t.Errorf("%q should be sensitive", k)
		}
	}
	for _, k := range plain {
		if r.isSensitiveKey(k) {
			t.Errorf("%q should not be sensitive", k)
		}
	}
}
