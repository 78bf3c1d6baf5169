//go:build linux && !amd64

package seccomp

// elfEnv is unused off amd64.
const elfEnv = "EXECLEDGER_SECCOMP_TEST_ELF"

// int80ELF is only built on amd64.
func int80ELF() []byte { return nil }

// archProbes has nothing architecture-specific to add off amd64.
func archProbes() []probe { return nil }
