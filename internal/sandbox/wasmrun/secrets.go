package wasmrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// ErrSecretNotFound reports a secret the provider does not hold.
var ErrSecretNotFound = errors.New("wasmrun: secret not found")

// MaxSecretBytes bounds a secret's value.
const MaxSecretBytes = 64 << 10

// A SecretProvider gives the values of named secrets to calls granted
// them (Config.Secrets). Secret returns ErrSecretNotFound, possibly
// wrapped, for a name it does not hold.
type SecretProvider interface {
	Secret(ctx context.Context, name string) (string, error)
}

// secretName is a name both providers accept: an environment variable's
// and a plain file's.
var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvSecrets provides secrets from the executor's environment: secret
// NAME is the variable Prefix+NAME. Names are letters, digits and '_',
// not starting with a digit.
type EnvSecrets struct {
	Prefix string
	// LookupEnv reads a variable; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

var _ SecretProvider = EnvSecrets{}

// Secret returns the variable Prefix+name.
func (e EnvSecrets) Secret(_ context.Context, name string) (string, error) {
	if !secretName.MatchString(name) {
		return "", fmt.Errorf("%w: %q is not a variable name", ErrSecretNotFound, name)
	}
	lookup := e.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, ok := lookup(e.Prefix + name)
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrSecretNotFound, name)
	}
	if len(v) > MaxSecretBytes {
		return "", fmt.Errorf("secret %s is over %d bytes", name, MaxSecretBytes)
	}
	return v, nil
}

// DirSecrets provides secrets from files: secret NAME is the regular file
// Dir/NAME (names as EnvSecrets'), read through an os.Root so that no
// symbolic link leads out of Dir, one trailing newline removed (as
// container runtimes' secret files often have).
type DirSecrets struct {
	Dir string
}

var _ SecretProvider = DirSecrets{}

// Secret reads Dir/name.
func (d DirSecrets) Secret(_ context.Context, name string) (string, error) {
	if !secretName.MatchString(name) {
		return "", fmt.Errorf("%w: %q is not a plain file name", ErrSecretNotFound, name)
	}
	root, err := os.OpenRoot(d.Dir)
	if err != nil {
		return "", fmt.Errorf("secrets dir: %w", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s", ErrSecretNotFound, name)
	}
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("secret %s is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretBytes+2))
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	v := strings.TrimSuffix(string(b), "\n")
	if len(v) > MaxSecretBytes {
		return "", fmt.Errorf("secret %s is over %d bytes", name, MaxSecretBytes)
	}
	return v, nil
}
