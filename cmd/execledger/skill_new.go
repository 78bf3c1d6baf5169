package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/execledger/execledger/internal/skill/scaffold"
)

func runSkillNew(_ context.Context, e *env, args []string) int {
	fs, _ := newFlagSet(e, "skill new")
	lang := fs.String("lang", "wat", "the module's language: "+strings.Join(scaffold.Languages, " or "))
	dir := fs.String("dir", "", "where to write it (default: ./ID)")
	pos, code, ok := e.parseArgs(fs, args, 1, "execledger skill new ID [--lang wat|go] [--dir DIR]")
	if !ok {
		return code
	}
	if *dir == "" {
		*dir = pos[0]
	}
	files, err := scaffold.Write(*dir, pos[0], *lang)
	if err != nil {
		return e.fail(exitUsage, "%v", err)
	}
	for _, f := range files {
		fmt.Fprintln(e.io.out, filepath.Join(*dir, f))
	}
	next := "execledger skill package " + *dir + " --key publisher.key --out " + pos[0] + ".skill"
	if *lang == "go" {
		next = "make -C " + *dir + "   # GOOS=wasip1 GOARCH=wasm go build\n  " + next
	}
	fmt.Fprintf(e.io.out, "\nnext:\n  execledger keygen --out publisher.key   # once\n  %s\n  execledger skill install %s.skill\n", next, pos[0])
	return exitOK
}
