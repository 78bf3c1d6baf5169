package main

import (
	"fmt"
	"os"
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
		Long: `New writes a skill's directory and prints the steps from there to a call: a publisher key,
packaging, trusting the key, installing, enabling, submitting. The steps and the Makefile name this
execledger binary as it can be run (bin/execledger of a checkout is on no PATH); make package
EXECLEDGER=... runs another.`,
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
	self, abs := e.selfCommand()
	var o scaffold.Options
	if !strings.ContainsAny(abs, " \t\n#$\"'\\") {
		o.Execledger = abs
	}
	files, err := scaffold.WriteWith(dir, id, lang, o)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	for _, f := range files {
		fmt.Fprintln(e.io.out, filepath.Join(dir, f))
	}
	w := e.io.out
	artifact := id + ".skill"
	fmt.Fprintf(w, "\nnext (with DATABASE_URL set, as a ledger_skill_admin login for trust, install and enable):\n")
	fmt.Fprintf(w, "  %s keygen --out publisher.key   # once: the publisher's signing key\n", self)
	if lang == "go" {
		fmt.Fprintf(w, "  make -C %s   # GOOS=wasip1 GOARCH=wasm go build\n", dir)
	}
	fmt.Fprintf(w, "  %s skill package %s --key publisher.key --out %s\n", self, dir, artifact)
	fmt.Fprintf(w, "  %s skill trust add %s publisher.key.pub   # once: trust the key for publisher %s\n", self, scaffold.Publisher(id), scaffold.Publisher(id))
	fmt.Fprintf(w, "  %s skill install %s   # verified, or quarantined until two other admins approve it\n", self, artifact)
	fmt.Fprintf(w, "  %s skill enable %s\n", self, id)
	fmt.Fprintf(w, "  %s submit %s '{\"x\":1}' --wait\n", self, id)
	return nil
}

// selfCommand is how to run this execledger binary: hint as the user can
// type it in the current directory ("execledger" when that is the one on
// PATH, else a path such as bin/execledger), abs as its absolute path.
func (e *env) selfCommand() (hint, abs string) {
	exe, err := os.Executable()
	if err != nil {
		return "execledger", "execledger"
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	self, err := os.Stat(exe)
	if err != nil {
		return "execledger", exe
	}
	for _, d := range filepath.SplitList(e.lookup("PATH")) {
		if fi, err := os.Stat(filepath.Join(d, "execledger")); err == nil && os.SameFile(fi, self) {
			return "execledger", exe
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.ContainsRune(rel, filepath.Separator) {
				rel = "." + string(filepath.Separator) + rel
			}
			return rel, exe
		}
	}
	return exe, exe
}
