package sandboxexec

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckPaths checks the plan against the host: every path it names must
// exist and be canonical, because Seatbelt matches the resolved path and a
// rule naming /tmp/ws would never match /private/tmp/ws. Program and Exec
// must be executable regular files; Workspace, Dir and TempDir must be
// directories. Command calls it before starting anything.
func (p Plan) CheckPaths() error {
	if err := p.validate(); err != nil {
		return err
	}
	for _, path := range p.paths() {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidPlan, err)
		}
		if real != path {
			return fmt.Errorf("%w: %s is not canonical, use %s", ErrInvalidPlan, path, real)
		}
	}
	for _, exe := range append([]string{p.Program}, p.Exec...) {
		fi, err := os.Stat(exe)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidPlan, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%w: %s is not an executable file", ErrInvalidPlan, exe)
		}
	}
	dirs := []string{p.Workspace, p.dir()}
	if p.TempDir != "" {
		dirs = append(dirs, p.TempDir)
	}
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidPlan, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s is not a directory", ErrInvalidPlan, dir)
		}
	}
	return nil
}
