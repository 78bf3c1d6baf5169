// Package redact removes secrets from text, JSON and output streams.
//
// A Redactor replaces what it finds with Marker ("<redacted>"). It finds
// secrets two ways.
//
// Exact values: AddSecret registers a value (a credential a skill was
// given, a token the run minted) that is then replaced wherever it
// appears, also JSON-escaped, URL-escaped or base64-encoded, in Bytes,
// String, JSON and across the write boundaries of a Writer. This is the
// reliable part, and its guarantee is tested by fuzzing: no added secret
// survives in the output, even where the marker meets the text around it
// (see core).
//
// Heuristics, as in Palyra, with its over- and under-redaction (gap #12)
// addressed:
//
//   - values under sensitive keys: Palyra's list (access_token api_key
//     apikey authorization bearer client_secret cookie credential password
//     private_key refresh_token secret session set_cookie signature token
//     vault_ref x_amz_* x_goog_*), normalised (case, '-' and '.' and
//     camelCase as '_'), matched as whole keys or words, never as
//     substrings: db_password, GITHUB_TOKEN, accessToken and X-Api-Key are
//     sensitive; tokenizer, token_count, sessions, keyboard and passwords
//     are not. In JSON objects (walked), in free text as key=value,
//     key: value, "key": "value" and key => value, and in URL queries and
//     fragments;
//   - URLs: the userinfo is dropped (https://user:pass@host/ becomes
//     https://host/);
//   - the credential after "Bearer", when it is shaped like one ("the
//     bearer of bad news" stays);
//   - the path segment after /token/, /secret/, /key/, /password/,
//     /credential/ and /session/ ("/keyboard/" is not such a marker);
//   - beyond Palyra: header and YAML lines (Authorization: Basic ...,
//     Cookie: a=1; b=2) lose their whole value, the credential after an
//     authentication scheme is kept with it, and the bodies of PEM private
//     keys are redacted.
//
// Input may be any bytes (invalid UTF-8, NUL, control characters): only
// the redacted ranges change, every other byte is copied as it was.
package redact
