package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/skill/scaffold"
)

func newSkillNewCmd(e *env) *cobra.Command {
	var lang, dir string
	cmd := &cobra.Command{
		Use:   "new ID",
		Short: "Write a new skill's directory: manifest, module source, Makefile",
		Example: `  execledger skill new acme.hello
  execledger skill new acme.greet --lang go --dir skills/greet`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return runSkillNew(e, args[0], lang, dir)
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "wat", "the module's language: "+strings.Join(scaffold.Languages, " or "))
	cmd.Flags().StringVar(&dir, "dir", "", "where to write it (`DIR`; default: ./ID)")
	enumFlag(cmd, "lang", scaffold.Languages...)
	e.unusedConfigFlag(cmd)
	return cmd
}

func runSkillNew(e *env, id, lang, dir string) error {
	if dir == "" {
		dir = id
	}
	files, err := scaffold.Write(dir, id, lang)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	for _, f := range files {
		fmt.Fprintln(e.io.out, filepath.Join(dir, f))
	}
	next := "execledger skill package " + dir + " --key publisher.key --out " + id + ".skill"
	if lang == "go" {
		next = "make -C " + dir + "   # GOOS=wasip1 GOARCH=wasm go build\n  " + next
	}
	fmt.Fprintf(e.io.out, "\nnext:\n  execledger keygen --out publisher.key   # once\n  %s\n  execledger skill install %s.skill\n", next, id)
	return nil
}
