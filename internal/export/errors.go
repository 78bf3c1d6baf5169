package export

import "errors"

var (
	// ErrNoCheckpoint: the log has no (published) checkpoint to prove
	// anything against yet.
	ErrNoCheckpoint = errors.New("the log has no checkpoint yet")
	// ErrNoCleanCheckpoint: every checkpoint looked at has a request's
	// final outcome sealed below it without its attestation.
	ErrNoCleanCheckpoint = errors.New("no clean checkpoint")
	// ErrNoRequest: the request asked for does not exist.
	ErrNoRequest = errors.New("no such request")
	// ErrNotSealed: nothing asked for is under the checkpoint yet.
	ErrNotSealed = errors.New("not yet sealed under a published checkpoint")
)
