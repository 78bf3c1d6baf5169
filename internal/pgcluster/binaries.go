//go:build unix

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// debianBinGlob is where Debian/Ubuntu (and the PGDG packages) install the
// server binaries, one directory per major version.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// binaries is a directory holding a complete set of PostgreSQL server
// binaries, together with their major version ("15", or "9.6" before 10).
type binaries struct {
	dir   string
	major string
}

func (b binaries) path(name string) string { return filepath.Join(b.dir, name) }

// numericMajor returns the major version as a number (9.6 → 9, 15 → 15).
func (b binaries) numericMajor() int {
	n, _ := strconv.Atoi(strings.SplitN(b.major, ".", 2)[0])
	return n
}

// requiredBinaries must all be present in a usable bin directory.
var requiredBinaries = []string{"postgres", "initdb"}

// findBinaries locates the server binaries. An explicit dir is only
// validated. Otherwise it tries, in order: the /usr/lib/postgresql/<major>/bin
// matching preferMajor (the data directory's PG_VERSION, when it has one), the
// highest version under /usr/lib/postgresql, `pg_config --bindir`, and PATH.
func findBinaries(ctx context.Context, r runner, dir, preferMajor string) (binaries, error) {
	if dir != "" {
		if err := checkBinDir(dir); err != nil {
			return binaries{}, fmt.Errorf("pgcluster: bin directory %s: %w: %w", dir, ErrNoBinaries, err)
		}
		return withVersion(ctx, r, dir)
	}
	var candidates []string
	if preferMajor != "" {
		candidates = append(candidates, filepath.Join("/usr/lib/postgresql", preferMajor, "bin"))
	}
	candidates = append(candidates, debianBinDirs()...)
	if out, err := exec.CommandContext(ctx, "pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, c := range candidates {
		if c != "" && checkBinDir(c) == nil {
			return withVersion(ctx, r, c)
		}
	}
	return binaries{}, fmt.Errorf("pgcluster: %w; looked in %s, `pg_config --bindir` and PATH", ErrNoBinaries, debianBinGlob)
}

// debianBinDirs returns the /usr/lib/postgresql/*/bin directories, highest
// version first.
func debianBinDirs() []string {
	dirs, _ := filepath.Glob(debianBinGlob)
	version := func(d string) float64 {
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		if err != nil {
			return -1
		}
		return v
	}
	sort.SliceStable(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	return dirs
}

func checkBinDir(dir string) error {
	for _, name := range requiredBinaries {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", filepath.Join(dir, name))
		}
	}
	return nil
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?`)

// withVersion runs `postgres --version` (allowed as root) and parses the
// major version from e.g. "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)".
func withVersion(ctx context.Context, r runner, dir string) (binaries, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version")
	cmd.Env = r.env(dir)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return binaries{}, fmt.Errorf("pgcluster: %s --version: %w", filepath.Join(dir, "postgres"), err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return binaries{}, fmt.Errorf("pgcluster: cannot parse the version of %s from %q", filepath.Join(dir, "postgres"), strings.TrimSpace(string(out)))
	}
	major := m[1]
	if n, _ := strconv.Atoi(major); n < 10 && m[2] != "" {
		major += "." + m[2] // before PostgreSQL 10 the major version was "9.6"
	}
	return binaries{dir: dir, major: major}, nil
}
