package redact

import "strings"

// sensitiveKeys are Palyra's sensitive keys, normalised (see normalizeKey),
// plus the usual session-id cookie names.
var sensitiveKeys = map[string]bool{
	"access_token": true, "api_key": true, "apikey": true, "authorization": true, "bearer": true,
	"client_secret": true, "cookie": true, "credential": true, "password": true, "private_key": true,
	"refresh_token": true, "secret": true, "session": true, "set_cookie": true, "signature": true,
	"token": true, "vault_ref": true,
	"session_id": true, "sessionid": true, "phpsessid": true, "jsessionid": true,
}

// sensitivePrefixes are Palyra's x_amz_* and x_goog_* families.
var sensitivePrefixes = []string{"x_amz_", "x_goog_"}

// strongWords make a key sensitive wherever they stand as a word:
// db_password, aws_secret_access_key, smtp_credentials.
var strongWords = map[string]bool{
	"password": true, "passwd": true, "passphrase": true, "secret": true,
	"credential": true, "credentials": true, "apikey": true,
}

// compoundKeys make a key sensitive wherever their words appear in a row:
// stripe_api_key_live, google_private_key_pem.
var compoundKeys = []string{"api_key", "private_key", "access_token", "refresh_token", "client_secret", "secret_key", "access_key"}

// suffixWords make a key sensitive only as its last word: github_token,
// proxy_authorization, request_signature, auth_cookie, user_session. As a
// first word they name something else (token_count, session_count).
var suffixWords = []string{"token", "cookie", "session", "signature", "authorization", "bearer", "vault_ref"}

// normalizeKey lower-cases a key and joins its words with '_': '-', '.',
// spaces and camelCase boundaries separate words ("X-Api-Key",
// "accessToken", "APIKey", "db.password" become "x_api_key",
// "access_token", "api_key", "db_password"). Leading dashes (--password)
// and quotes are dropped.
func normalizeKey(raw string) string {
	s := strings.Trim(raw, "\"'` \t-")
	var b strings.Builder
	b.Grow(len(s) + 4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' || c == '.' || c == ' ' || c == '_':
			c = '_'
		case isUpper(c):
			if i > 0 && (isLowerOrDigit(s[i-1]) || (isUpper(s[i-1]) && i+1 < len(s) && isLower(s[i+1]))) {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isUpper(c byte) bool        { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool        { return c >= 'a' && c <= 'z' }
func isLowerOrDigit(c byte) bool { return isLower(c) || c >= '0' && c <= '9' }

// isSensitiveKey reports whether a value under key is a secret.
func (r *Redactor) isSensitiveKey(key string) bool {
	k := normalizeKey(key)
	if k == "" {
		return false
	}
	if sensitiveKeys[k] || r.extraKeys[k] {
		return true
	}
	for _, p := range sensitivePrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	words := "_" + k + "_"
	for _, w := range strings.Split(k, "_") {
		if strongWords[w] {
			return true
		}
	}
	for _, c := range compoundKeys {
		if strings.Contains(words, "_"+c+"_") {
			return true
		}
	}
	for _, w := range suffixWords {
		if strings.HasSuffix(k, "_"+w) {
			return true
		}
	}
	return false
}
