package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `execledger version` prints; in --json, one object.
type versionInfo struct {
	Module  string `json:"module"`
	Version string `json:"version"` // the module's version; "(devel)" when built from a checkout
	// Revision, Time and Modified are the VCS commit the binary was built
	// from, when the build recorded it (go build in a checkout does).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func newVersionCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the VCS revision it was built from and the Go version",
		Example: `  execledger version
  execledger version --json`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			return printVersion(e, readVersion())
		},
	}
	e.jsonFlag(cmd, "print a JSON object")
	return cmd
}

// readVersion reads the build information the Go toolchain put in the binary.
func readVersion() versionInfo {
	v := versionInfo{Module: "github.com/execledger/execledger", Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func printVersion(e *env, v versionInfo) error {
	if e.json {
		return printJSON(e, v)
	}
	w := e.io.out
	fmt.Fprintf(w, "execledger %s\n", v.Version)
	if v.Revision != "" {
		modified := ""
		if v.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(w, "revision:  %s%s\n", v.Revision, modified)
	}
	if v.Time != "" {
		fmt.Fprintf(w, "time:      %s\n", v.Time)
	}
	fmt.Fprintf(w, "go:        %s\n", v.Go)
	return nil
}
