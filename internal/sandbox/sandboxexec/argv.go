package sandboxexec

// Argv returns the whole command line: sandbox-exec, the profile as one
// argument, "--" so that no program argument is read as an option, the
// program and its arguments. No shell parses it.
func (p Plan) Argv() ([]string, error) {
	profile, err := p.Profile()
	if err != nil {
		return nil, err
	}
	argv := make([]string, 0, 5+len(p.ProgramArgs))
	argv = append(argv, Path, "-p", profile, "--", p.Program)
	return append(argv, p.ProgramArgs...), nil
}

// Environ returns the program's whole environment: Env with PATH and
// TMPDIR defaulted. sandbox-exec runs with exactly this environment and
// passes it on unchanged.
func (p Plan) Environ() ([]string, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p.env(), nil
}
