package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/ledger"
)

// skillCommands are the subcommands of `execledger skill`.
func skillCommands() []command {
	return []command{
		{"new", "ID [--lang wat|go] [--dir DIR]", "write a new skill's directory: manifest, module source, Makefile", runSkillNew},
		{"package", "DIR --key K --out FILE", "build the signed, deterministic artifact of the skill in DIR", runSkillPackage},
		{"install", "FILE [--config FILE] [--json]", "verify an artifact against the trust store, record it and audit it: verified, or quarantined with every failed check", runSkillInstall},
		{"audit", "ID [--config FILE] [--json]", "audit the installed skill again (a failure quarantines it)", runSkillAudit},
		{"approve", "ID [--digest D] [--note TEXT]", "approve a quarantined skill's artifact (two approvers, neither its installer)", runSkillApprove},
		{"enable", "ID [--note TEXT]", "let a verified or approved skill's tools run", runSkillEnable},
		{"disable", "ID [--reason TEXT]", "stop a skill's tools from running", runSkillDisable},
		{"rollback", "ID [--reason TEXT]", "return to the skill's previous artifact, disabled", runSkillRollback},
		{"remove", "ID [--reason TEXT]", "retire a skill that is not enabled", runSkillRemove},
		{"list", "[--json]", "every installed skill and its state", runSkillList},
		{"show", "ID [--json]", "a skill's state, failed checks and history", runSkillShow},
		{"trust", "add|revoke|list [ARGS]", "the publisher keys the trust store holds (execledger skill trust help)", runSkillTrust},
	}
}

func runSkill(ctx context.Context, e *env, args []string) int {
	return dispatch(ctx, e, "skill", skillCommands(), args)
}

// dispatch runs the subcommand args[0] of group.
func dispatch(ctx context.Context, e *env, group string, cmds []command, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		groupUsage(e.io.err, group, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.io.err, "execledger: unknown %s command %q\n\n", group, args[0])
	groupUsage(e.io.err, group, cmds)
	return exitUsage
}

func groupUsage(w io.Writer, group string, cmds []command) {
	fmt.Fprintf(w, "usage: execledger %s COMMAND [ARGS]\n\ncommands:\n", group)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.args, c.summary)
	}
}

// lifecycle runs one lifecycle request on skill pos[0] and prints what
// it did: exit 3 when the lifecycle refused it (recorded as skill.refused).
func (e *env) lifecycle(ctx context.Context, name, flagName, flagHelp string,
	do func(ctx context.Context, db ledger.DBTX, id, text string) (registry.Result, error), args []string) int {
	fs, cfgPath := newFlagSet(e, "skill "+name)
	text := fs.String(flagName, "", flagHelp)
	usage := fmt.Sprintf("execledger skill %s ID [--%s TEXT]", name, flagName)
	pos, code, ok := e.parseArgs(fs, args, 1, usage)
	if !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	r, err := do(ctx, pool, pos[0], *text)
	if err != nil {
		return e.skillError(err)
	}
	return e.skillResult(pos[0], r)
}

func (e *env) skillResult(id string, r registry.Result) int {
	if !r.OK {
		return e.fail(exitNotOK, "skill %s: refused: %s (state %s; recorded as skill.refused)", id, r.Message, r.Status)
	}
	fmt.Fprintf(e.io.out, "skill %s: %s (state %s)\n", id, r.Message, r.Status)
	return exitOK
}

// skillError reports a failed skill request: no such skill (exit 5), or
// the database's own words.
func (e *env) skillError(err error) int {
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return e.fail(exitNotFound, "%v", err)
	case errors.As(err, &pe) && pe.Code == "P0002": // no_data_found
		return e.fail(exitNotFound, "%s", pe.Message)
	case errors.As(err, &pe):
		msg := pe.Message
		if pe.Hint != "" {
			msg += " (" + pe.Hint + ")"
		}
		return e.fail(exitError, "%s", msg)
	}
	return e.fail(exitError, "%v", err)
}

func runSkillApprove(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "skill approve")
	digest := fs.String("digest", "", "the artifact digest reviewed (sha256:...); default: the skill's current artifact, named in the output")
	note := fs.String("note", "", "why (recorded in skill.approved)")
	pos, code, ok := e.parseArgs(fs, args, 1, "execledger skill approve ID [--digest D] [--note TEXT]")
	if !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	if *digest == "" {
		s, err := registry.Get(ctx, pool, pos[0])
		if err != nil {
			return e.skillError(err)
		}
		*digest = s.ArtifactDigest
	}
	r, err := registry.Approve(ctx, pool, pos[0], *digest, *note)
	if err != nil {
		return e.skillError(err)
	}
	if r.OK {
		fmt.Fprintf(e.io.out, "approved artifact %s\n", *digest)
	}
	return e.skillResult(pos[0], r)
}

func runSkillEnable(ctx context.Context, e *env, args []string) int {
	return e.lifecycle(ctx, "enable", "note", "why (recorded in skill.enabled)", registry.Enable, args)
}

func runSkillDisable(ctx context.Context, e *env, args []string) int {
	return e.lifecycle(ctx, "disable", "reason", "why (recorded in skill.disabled)", registry.Disable, args)
}

func runSkillRollback(ctx context.Context, e *env, args []string) int {
	return e.lifecycle(ctx, "rollback", "reason", "why (recorded in skill.rolled_back)", registry.Rollback, args)
}

func runSkillRemove(ctx context.Context, e *env, args []string) int {
	return e.lifecycle(ctx, "remove", "reason", "why (recorded in skill.removed)", registry.Remove, args)
}

func runSkillList(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "skill list")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if _, code, ok := e.parseArgs(fs, args, 0, "execledger skill list [--json]"); !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	skills, err := registry.List(ctx, pool)
	if err != nil {
		return e.skillError(err)
	}
	if *asJSON {
		if skills == nil {
			skills = []registry.Skill{}
		}
		return printJSON(e, skills)
	}
	tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tVERSION\tSTATUS\tPUBLISHER\tTOOLS\tAPPROVALS\tARTIFACT")
	for _, s := range skills {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, s.Version, s.Status, s.Publisher, strings.Join(s.Tools, ","),
			len(s.Approvals), s.ArtifactDigest)
	}
	if err := tw.Flush(); err != nil {
		return e.fail(exitError, "%v", err)
	}
	return exitOK
}

// skillShow is `skill show --json`.
type skillShow struct {
	registry.Skill
	History []registry.Event `json:"history"`
}

func runSkillShow(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "skill show")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := e.parseArgs(fs, args, 1, "execledger skill show ID [--json]")
	if !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	s, err := registry.Get(ctx, pool, pos[0])
	if err != nil {
		return e.skillError(err)
	}
	h, err := registry.History(ctx, pool, pos[0])
	if err != nil {
		return e.skillError(err)
	}
	if *asJSON {
		return printJSON(e, skillShow{s, h})
	}
	w := e.io.out
	fmt.Fprintf(w, "skill:      %s %s (%s)\nstatus:     %s\npublisher:  %s, key %s\nartifact:   %s\npayload:    %s\n",
		s.ID, s.Version, strings.Join(s.Tools, ", "), s.Status, s.Publisher, s.KeyID, s.ArtifactDigest, s.PayloadDigest)
	fmt.Fprintf(w, "installed:  by %s\napprovals:  %s\n", s.InstalledBy, orNone(strings.Join(s.Approvals, ", ")))
	if string(s.FailedChecks) != "[]" && len(s.FailedChecks) > 0 {
		fmt.Fprintf(w, "failed:     %s\n", s.FailedChecks)
	}
	fmt.Fprintln(w, "history:")
	for _, ev := range h {
		fmt.Fprintf(w, "  %3d  %s  %-18s %s\n", ev.Version, ev.RecordedAt.UTC().Format("2006-01-02T15:04:05Z"), ev.Type, ev.Actor)
	}
	return exitOK
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
