//go:build !race

package artifact

// stride is how many bytes the every-byte tests step: every byte.
const stride = 1
