package attest

import "errors"

// Errors returned (wrapped) by this package; match them with errors.Is.
var (
	// ErrMalformed reports an envelope or statement that cannot be decoded.
	ErrMalformed = errors.New("malformed attestation")
	// ErrNoSignatures reports an envelope without signatures.
	ErrNoSignatures = errors.New("envelope has no signatures")
	// ErrSignature reports an envelope none of whose signatures verifies
	// with the given public key.
	ErrSignature = errors.New("no valid signature for the public key")
	// ErrPayloadType reports an envelope whose payloadType is not PayloadType.
	ErrPayloadType = errors.New("unexpected payload type")
	// ErrStatementType reports a statement whose _type is not StatementType.
	ErrStatementType = errors.New("unexpected statement type")
	// ErrPredicateType reports a statement whose predicateType is not PredicateType.
	ErrPredicateType = errors.New("unexpected predicate type")
	// ErrInvalidStatement reports a statement that is well-formed JSON but
	// misses required content (subjects, ids, decision, timestamps).
	ErrInvalidStatement = errors.New("invalid statement")
	// ErrSubjectMismatch reports input or output bytes whose digest differs
	// from the statement's subject.
	ErrSubjectMismatch = errors.New("subject digest mismatch")
	// ErrKeyFile reports a key file that is missing, unreadable, malformed
	// or not an Ed25519 key.
	ErrKeyFile = errors.New("bad key file")
	// ErrKeyPermissions reports a private key file readable or writable by
	// group or others.
	ErrKeyPermissions = errors.New("private key file is accessible by group or others")
)
