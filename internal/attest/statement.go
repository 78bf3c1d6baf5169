package attest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Format identifiers.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://execledger.dev/attestation/execution/v1"
	PayloadType   = "application/vnd.in-toto+json"
)

// Subject names of a Statement.
const (
	SubjectInput  = "input"
	SubjectOutput = "output"
)

// digestAlg is the only digest algorithm in subjects and digests.
const digestAlg = "sha256"

// Subject is an in-toto resource descriptor: a name and its digests
// ({"sha256": "<hex>"}).
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Statement is an in-toto Statement v1 whose predicate is an Execution.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"` // "input" and "output" (output digest of "" when there is no output, e.g. a denial)
	PredicateType string    `json:"predicateType"`
	Predicate     Execution `json:"predicate"`
}

// NewStatement returns the statement attesting e, with subjects "input" and
// "output" computed from the exact input and output bytes (nil output is
// the empty string). Timestamps are converted to UTC.
func NewStatement(input, output []byte, e Execution) Statement {
	e.StartedAt = e.StartedAt.UTC()
	e.FinishedAt = e.FinishedAt.UTC()
	return Statement{
		Type: StatementType,
		Subject: []Subject{
			{Name: SubjectInput, Digest: map[string]string{digestAlg: sha256Hex(input)}},
			{Name: SubjectOutput, Digest: map[string]string{digestAlg: sha256Hex(output)}},
		},
		PredicateType: PredicateType,
		Predicate:     e,
	}
}

// Validate checks the statement type, predicate type, subjects (exactly
// "input" and "output", each with only a valid sha256 digest) and the
// required predicate fields: attestation_id, request_id, tool, executor, a
// decision of "allow" or "deny" (a denial cannot succeed), started_at set and
// not after finished_at, and a well-formed previous_attestation_digest.
func (st *Statement) Validate() error {
	if err := st.validate(); err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	return nil
}

func (st *Statement) validate() error {
	if st.Type != StatementType {
		return fmt.Errorf("%w: %q, want %q", ErrStatementType, st.Type, StatementType)
	}
	if st.PredicateType != PredicateType {
		return fmt.Errorf("%w: %q, want %q", ErrPredicateType, st.PredicateType, PredicateType)
	}
	if err := st.validateSubjects(); err != nil {
		return err
	}
	return st.Predicate.validate()
}

func (st *Statement) validateSubjects() error {
	if len(st.Subject) != 2 {
		return fmt.Errorf("%w: %d subjects, want %q and %q", ErrInvalidStatement, len(st.Subject), SubjectInput, SubjectOutput)
	}
	for _, name := range []string{SubjectInput, SubjectOutput} {
		sub, err := st.subject(name)
		if err != nil {
			return err
		}
		if len(sub.Digest) != 1 || !validHex(sub.Digest[digestAlg]) {
			return fmt.Errorf("%w: subject %q digest must be exactly {%q: <64 hex>}", ErrInvalidStatement, name, digestAlg)
		}
	}
	return nil
}

// subject returns the one subject called name.
func (st *Statement) subject(name string) (Subject, error) {
	var found []Subject
	for _, s := range st.Subject {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		return Subject{}, fmt.Errorf("%w: %d subjects named %q, want 1", ErrInvalidStatement, len(found), name)
	}
	return found[0], nil
}

// VerifySubjects checks that input and output are exactly the bytes whose
// digests the statement's "input" and "output" subjects record.
func (st *Statement) VerifySubjects(input, output []byte) error {
	for _, c := range []struct {
		name string
		b    []byte
	}{{SubjectInput, input}, {SubjectOutput, output}} {
		sub, err := st.subject(c.name)
		if err != nil {
			return fmt.Errorf("attest: %w", err)
		}
		if got, want := sha256Hex(c.b), sub.Digest[digestAlg]; got != want {
			return fmt.Errorf("attest: %w: %s has sha256 %s, statement records %q", ErrSubjectMismatch, c.name, got, want)
		}
	}
	return nil
}

// Digest returns the SHA-256 digest of b as "sha256:<hex>".
func Digest(b []byte) string {
	return digestAlg + ":" + sha256Hex(b)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// validDigest reports whether d has Digest's format.
func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, digestAlg+":")
	return ok && validHex(hexPart)
}

// validHex reports whether s is a lowercase hex SHA-256.
func validHex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
