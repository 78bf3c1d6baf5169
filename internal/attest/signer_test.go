package attest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
)

func TestSignVerifyRoundTrip(t *testing.T) {
	s := NewSigner(testKey("a"))
	for _, c := range []struct {
		name          string
		input, output []byte
		e             Execution
	}{
		{"allow", testInput, testOutput, allowedExecution()},
		{"deny", testInput, nil, deniedExecution()},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := NewStatement(c.input, c.output, c.e)
			env, envJSON, digest, err := s.Sign(st)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			if env.PayloadType != PayloadType || len(env.Signatures) != 1 || env.Signatures[0].KeyID != s.KeyID() {
				t.Fatalf("envelope = %+v", env)
			}
			if digest != Digest(envJSON) {
				t.Errorf("digest = %q, want Digest(envelopeJSON) = %q", digest, Digest(envJSON))
			}
			var fromJSON Envelope
			if err := json.Unmarshal(envJSON, &fromJSON); err != nil {
				t.Fatal(err)
			}
			if fromJSON.Payload != env.Payload || fromJSON.Signatures[0] != env.Signatures[0] {
				t.Errorf("envelopeJSON does not encode env")
			}

			got, err := Verify(envJSON, s.PublicKey())
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if err := got.VerifySubjects(c.input, c.output); err != nil {
				t.Errorf("VerifySubjects: %v", err)
			}
			assertSameStatement(t, got, &st)
		})
	}
}

// assertSameStatement compares through JSON: Enforcement numbers come back
// as float64 and times without their zone, which JSON does not carry.
func assertSameStatement(t *testing.T, got, want *Statement) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("statement changed in the round trip:\n got %s\nwant %s", g, w)
	}
	if !got.Predicate.StartedAt.Equal(want.Predicate.StartedAt) || !got.Predicate.FinishedAt.Equal(want.Predicate.FinishedAt) {
		t.Errorf("timestamps changed: got %v..%v, want %v..%v", got.Predicate.StartedAt, got.Predicate.FinishedAt,
			want.Predicate.StartedAt, want.Predicate.FinishedAt)
	}
}

func TestKeyID(t *testing.T) {
	priv := testKey("a")
	s := NewSigner(priv)
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	if want := "ed25519:" + hex.EncodeToString(sum[:])[:16]; s.KeyID() != want {
		t.Errorf("KeyID() = %q, want %q", s.KeyID(), want)
	}
	if !regexp.MustCompile(`^ed25519:[0-9a-f]{16}$`).MatchString(s.KeyID()) {
		t.Errorf("KeyID() = %q, bad format", s.KeyID())
	}
	if !s.PublicKey().Equal(pub) {
		t.Errorf("PublicKey() differs from the key's public half")
	}
	if PublicKeyID(NewSigner(testKey("b")).PublicKey()) == s.KeyID() {
		t.Errorf("two keys share a key id")
	}
}

func TestSignerCopiesKey(t *testing.T) {
	priv := testKey("a")
	s := NewSigner(priv)
	want := s.KeyID()
	clear(priv)
	if _, envJSON, _, err := s.Sign(NewStatement(testInput, testOutput, allowedExecution())); err != nil {
		t.Fatalf("Sign after the caller cleared its key: %v", err)
	} else if _, err := Verify(envJSON, NewSigner(testKey("a")).PublicKey()); err != nil || s.KeyID() != want {
		t.Fatalf("Verify = %v, key id %q -> %q", err, want, s.KeyID())
	}
}

func TestSignIsDeterministic(t *testing.T) {
	s := NewSigner(testKey("a"))
	st := NewStatement(testInput, testOutput, allowedExecution())
	_, a, da, err := s.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	_, b, db, err := s.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) || da != db {
		t.Errorf("two signatures of one statement differ:\n%s\n%s", a, b)
	}
}

func TestSignRefuses(t *testing.T) {
	st := NewStatement(testInput, testOutput, allowedExecution())
	bad := st
	bad.Predicate.Decision = "maybe"
	if _, envJSON, _, err := NewSigner(testKey("a")).Sign(bad); !errors.Is(err, ErrInvalidStatement) || envJSON != nil {
		t.Errorf("Sign(invalid) = %q, %v; want %v", envJSON, err, ErrInvalidStatement)
	}
	if _, _, _, err := NewSigner(testKey("a")[:31]).Sign(st); err == nil {
		t.Errorf("Sign with a 31-byte key succeeded")
	}
	if _, _, _, err := NewSigner(nil).Sign(st); err == nil {
		t.Errorf("Sign with a nil key succeeded")
	}
}

// TestSignConcurrent is meant for -race: one Signer shared by goroutines.
func TestSignConcurrent(t *testing.T) {
	s := NewSigner(testKey("a"))
	pub := s.PublicKey()
	const goroutines, perGoroutine = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				e := allowedExecution()
				e.AttestationID = fmt.Sprintf("req-%d-%d", g, i)
				input := fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i)
				_, envJSON, _, err := s.Sign(NewStatement(input, testOutput, e))
				if err != nil {
					errs <- err
					continue
				}
				st, err := Verify(envJSON, pub)
				switch {
				case err != nil:
					errs <- err
				case st.Predicate.AttestationID != e.AttestationID:
					errs <- fmt.Errorf("attestation id %q, want %q", st.Predicate.AttestationID, e.AttestationID)
				default:
					if err := st.VerifySubjects(input, testOutput); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkSign(b *testing.B) {
	s := NewSigner(testKey("a"))
	st := NewStatement(testInput, testOutput, allowedExecution())
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := s.Sign(st); err != nil {
			b.Fatal(err)
		}
	}
}
