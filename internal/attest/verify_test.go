package attest

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// signedEnvelope signs a valid statement with key "a".
func signedEnvelope(t testing.TB) []byte {
	t.Helper()
	_, envJSON, _, err := NewSigner(testKey("a")).Sign(NewStatement(testInput, testOutput, allowedExecution()))
	if err != nil {
		t.Fatal(err)
	}
	return envJSON
}

// signRaw signs payload as it is, bypassing Sign's validation, to make
// validly signed envelopes that Verify must still refuse.
func signRaw(t *testing.T, payloadType string, payload []byte) []byte {
	t.Helper()
	_, envJSON, _, err := NewSigner(testKey("a")).signPayload(payloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	return envJSON
}

// statementJSON returns the valid statement's JSON after mutate edits it.
func statementJSON(t *testing.T, mutate func(map[string]any)) []byte {
	t.Helper()
	b, err := json.Marshal(NewStatement(testInput, testOutput, allowedExecution()))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	mutate(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	return b
}

// editEnvelope returns envJSON after mutate edits the decoded envelope.
func editEnvelope(t *testing.T, envJSON []byte, mutate func(*Envelope)) []byte {
	t.Helper()
	var env Envelope
	if err := json.Unmarshal(envJSON, &env); err != nil {
		t.Fatal(err)
	}
	mutate(&env)
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyRejects(t *testing.T) {
	pub := NewSigner(testKey("a")).PublicKey()
	good := signedEnvelope(t)
	if _, err := Verify(good, pub); err != nil {
		t.Fatalf("baseline envelope does not verify: %v", err)
	}
	byB := func() []byte {
		_, b, _, err := NewSigner(testKey("b")).Sign(NewStatement(testInput, testOutput, allowedExecution()))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()

	for _, c := range []struct {
		name     string
		envelope []byte
		want     error
	}{
		{"tampered payload", editEnvelope(t, good, func(e *Envelope) {
			p, _ := base64.StdEncoding.DecodeString(e.Payload)
			p = bytes.Replace(p, []byte(`"success":true`), []byte(`"success":false`), 1)
			e.Payload = base64.StdEncoding.EncodeToString(p)
		}), ErrSignature},
		{"tampered signature", editEnvelope(t, good, func(e *Envelope) {
			s, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
			s[0] ^= 1
			e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(s)
		}), ErrSignature},
		{"signed by another key", byB, ErrSignature},
		{"another key claiming our key id", editEnvelope(t, byB, func(e *Envelope) {
			e.Signatures[0].KeyID = PublicKeyID(pub)
		}), ErrSignature},
		{"our signature under another key id", editEnvelope(t, good, func(e *Envelope) {
			e.Signatures[0].KeyID = "ed25519:0000000000000000"
		}), ErrSignature},
		{"payloadType changed", editEnvelope(t, good, func(e *Envelope) { e.PayloadType = "application/json" }), ErrPayloadType},
		{"payloadType signed", signRaw(t, "application/json", statementJSON(t, func(map[string]any) {})), ErrPayloadType},
		{"statement v0.1", signRaw(t, PayloadType, statementJSON(t, func(m map[string]any) {
			m["_type"] = "https://in-toto.io/Statement/v0.1"
		})), ErrStatementType},
		{"no statement type", signRaw(t, PayloadType, statementJSON(t, func(m map[string]any) { delete(m, "_type") })), ErrStatementType},
		{"other predicateType", signRaw(t, PayloadType, statementJSON(t, func(m map[string]any) {
			m["predicateType"] = "https://slsa.dev/provenance/v1"
		})), ErrPredicateType},
		{"invalid predicate", signRaw(t, PayloadType, statementJSON(t, func(m map[string]any) {
			m["predicate"].(map[string]any)["decision"] = "perhaps"
		})), ErrInvalidStatement},
		{"payload not JSON", signRaw(t, PayloadType, []byte("not json")), ErrMalformed},
		{"payload with trailing data", signRaw(t, PayloadType, append(statementJSON(t, func(map[string]any) {}), "{}"...)), ErrMalformed},
		{"predicate of the wrong shape", signRaw(t, PayloadType, statementJSON(t, func(m map[string]any) { m["predicate"] = "x" })), ErrMalformed},
		{"payload not base64", editEnvelope(t, good, func(e *Envelope) { e.Payload = "!!" + e.Payload }), ErrMalformed},
		{"signature not base64", editEnvelope(t, good, func(e *Envelope) { e.Signatures[0].Sig = "%%%" }), ErrMalformed},
		{"envelope not JSON", []byte(`{"payloadType":`), ErrMalformed},
		{"envelope with trailing data", append(append([]byte(nil), good...), '}'), ErrMalformed},
		{"empty input", nil, ErrMalformed},
		{"no signatures", editEnvelope(t, good, func(e *Envelope) { e.Signatures = []Signature{} }), ErrNoSignatures},
		{"signatures missing", editEnvelope(t, good, func(e *Envelope) { e.Signatures = nil }), ErrNoSignatures},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := Verify(c.envelope, pub)
			if !errors.Is(err, c.want) || st != nil {
				t.Fatalf("Verify() = %v, %v; want %v", st, err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "attest: verify: ") {
				t.Errorf("error %q lacks the attest: verify: prefix", err)
			}
		})
	}
}

func TestVerifyAccepts(t *testing.T) {
	pub := NewSigner(testKey("a")).PublicKey()
	good := signedEnvelope(t)
	_, byB, _, err := NewSigner(testKey("b")).Sign(NewStatement(testInput, testOutput, allowedExecution()))
	if err != nil {
		t.Fatal(err)
	}
	var other Envelope
	if err := json.Unmarshal(byB, &other); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		envelope []byte
	}{
		{"as signed", good},
		{"empty keyid (a hint only)", editEnvelope(t, good, func(e *Envelope) { e.Signatures[0].KeyID = "" })},
		{"another key's signature first", editEnvelope(t, good, func(e *Envelope) {
			e.Signatures = append([]Signature{other.Signatures[0]}, e.Signatures...)
		})},
		{"URL base64", editEnvelope(t, good, func(e *Envelope) {
			p, _ := base64.StdEncoding.DecodeString(e.Payload)
			e.Payload = base64.URLEncoding.EncodeToString(p)
		})},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Verify(c.envelope, pub); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
}

func TestVerifyBadPublicKey(t *testing.T) {
	good := signedEnvelope(t)
	for _, pub := range []ed25519.PublicKey{nil, make(ed25519.PublicKey, 31)} {
		if _, err := Verify(good, pub); err == nil {
			t.Errorf("Verify with a %d-byte key succeeded", len(pub))
		}
	}
}

// FuzzVerify checks that Verify never panics and only returns statements
// that are valid and match the key.
func FuzzVerify(f *testing.F) {
	good := signedEnvelope(f)
	f.Add(good)
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"","signatures":[{"keyid":"","sig":""}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	pub := NewSigner(testKey("a")).PublicKey()
	f.Fuzz(func(t *testing.T, envJSON []byte) {
		st, err := Verify(envJSON, pub)
		if err != nil {
			if st != nil {
				t.Fatalf("Verify returned a statement with error %v", err)
			}
			return
		}
		if err := st.Validate(); err != nil {
			t.Fatalf("Verify accepted an invalid statement: %v", err)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	envJSON := signedEnvelope(b)
	pub := NewSigner(testKey("a")).PublicKey()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(envJSON, pub); err != nil {
			b.Fatal(err)
		}
	}
}
