//go:build race

package artifact

// stride is how many bytes the every-byte tests step: the race detector
// slows Open tenfold and finds nothing in it (Open shares no memory).
const stride = 7
