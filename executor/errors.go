package executor

import "errors"

// Causes a running call's context is cancelled with.
var (
	errCancelled = errors.New("request cancelled")
	errShutdown  = errors.New("executor shutting down")
	errLeaseLost = errors.New("lease lost")
)
