package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/skill/audit"
	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/ledger"
)

func newSkillCmd(e *env) *cobra.Command {
	return newGroupCmd("skill", "Skills: write, package and sign, install and audit, approve (two-person rule), enable and disable",
		`Skill manages skills, WebAssembly modules that add tools: write and package one (new,
package), install and audit it against the trust store (install, audit), approve a
quarantined one (two approvers, neither its installer), and run it (enable, disable,
rollback, remove). The lifecycle commands exit 3 when the lifecycle refuses the request
(recorded as skill.refused), 5 when there is no such skill.`,
		`  execledger skill new acme.hello
  execledger skill install acme.hello.skill
  execledger skill enable acme.hello`,
		newSkillNewCmd(e), newSkillPackageCmd(e), newSkillInstallCmd(e), newSkillAuditCmd(e), newSkillApproveCmd(e),
		newLifecycleCmd(e, "enable", "Let a verified or approved skill's tools run", "note", "why (recorded in skill.enabled)", registry.Enable),
		newLifecycleCmd(e, "disable", "Stop a skill's tools from running", "reason", "why (recorded in skill.disabled)", registry.Disable),
		newLifecycleCmd(e, "rollback", "Return to the skill's previous artifact, disabled", "reason", "why (recorded in skill.rolled_back)", registry.Rollback),
		newLifecycleCmd(e, "remove", "Retire a skill that is not enabled", "reason", "why (recorded in skill.removed)", registry.Remove),
		newSkillListCmd(e), newSkillShowCmd(e), newSkillTrustCmd(e))
}

// newLifecycleCmd makes the command of one lifecycle request on a skill,
// with a flag for the text the event records.
func newLifecycleCmd(e *env, name, short, flagName, flagHelp string,
	do func(ctx context.Context, db ledger.DBTX, id, text string) (registry.Result, error)) *cobra.Command {
	var text string
	cmd := &cobra.Command{
		Use:     name + " ID",
		Short:   short,
		Example: fmt.Sprintf("  execledger skill %s acme.hello --%s %q", name, flagName, "reviewed by ops"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.lifecycle(cmd.Context(), args[0], text, do)
		},
	}
	cmd.Flags().StringVar(&text, flagName, "", flagHelp)
	e.configFlag(cmd)
	return cmd
}

// lifecycle runs one lifecycle request on skill id and prints what it
// did: exit 3 when the lifecycle refused it (recorded as skill.refused).
func (e *env) lifecycle(ctx context.Context, id, text string,
	do func(ctx context.Context, db ledger.DBTX, id, text string) (registry.Result, error)) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	r, err := do(ctx, pool, id, text)
	if err != nil {
		return e.skillError(err)
	}
	return e.skillResult(id, r)
}

func (e *env) skillResult(id string, r registry.Result) error {
	if !r.OK {
		return fail(exitNotOK, "skill %s: refused: %s (state %s; recorded as skill.refused)", id, r.Message, r.Status)
	}
	fmt.Fprintf(e.io.out, "skill %s: %s (state %s)\n", id, r.Message, r.Status)
	return nil
}

// skillError reports a failed skill request: no such skill (exit 5), or
// the database's own words.
func (e *env) skillError(err error) error {
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return fail(exitNotFound, "%v", err)
	case errors.As(err, &pe) && pe.Code == "P0002": // no_data_found
		return fail(exitNotFound, "%s", pe.Message)
	case errors.As(err, &pe):
		msg := pe.Message
		if pe.Hint != "" {
			msg += " (" + pe.Hint + ")"
		}
		return fail(exitError, "%s", msg)
	}
	return fail(exitError, "%v", err)
}

func newSkillApproveCmd(e *env) *cobra.Command {
	var digest, note string
	cmd := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve a quarantined skill's artifact (two approvers, neither its installer)",
		Example: `  execledger skill approve acme.hello --note "read the module's source"
  execledger skill approve acme.hello --digest sha256:3f1c...`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSkillApprove(cmd.Context(), e, args[0], digest, note)
		},
	}
	cmd.Flags().StringVar(&digest, "digest", "", "the artifact `DIGEST` reviewed (sha256:...); default: the skill's current artifact, named in the output")
	cmd.Flags().StringVar(&note, "note", "", "why (recorded in skill.approved)")
	e.configFlag(cmd)
	return cmd
}

func runSkillApprove(ctx context.Context, e *env, id, digest, note string) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	if digest == "" {
		s, err := registry.Get(ctx, pool, id)
		if err != nil {
			return e.skillError(err)
		}
		digest = s.ArtifactDigest
	}
	r, err := registry.Approve(ctx, pool, id, digest, note)
	if err != nil {
		return e.skillError(err)
	}
	if r.OK {
		fmt.Fprintf(e.io.out, "approved artifact %s\n", digest)
	}
	return e.skillResult(id, r)
}

func newSkillListCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Every installed skill and its state",
		Example: `  execledger skill list
  execledger skill list --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSkillList(cmd.Context(), e)
		},
	}
	e.jsonFlag(cmd, "print a JSON array")
	e.configFlag(cmd)
	return cmd
}

func runSkillList(ctx context.Context, e *env) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	skills, err := registry.List(ctx, pool)
	if err != nil {
		return e.skillError(err)
	}
	if e.json {
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
		return fail(exitError, "%v", err)
	}
	return nil
}

// skillShow is `skill show --json`.
type skillShow struct {
	registry.Skill
	History []registry.Event `json:"history"`
}

func newSkillShowCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "A skill's state, failed checks and history",
		Example: `  execledger skill show acme.hello
  execledger skill show acme.hello --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSkillShow(cmd.Context(), e, args[0])
		},
	}
	e.jsonFlag(cmd, "print JSON")
	e.configFlag(cmd)
	return cmd
}

func runSkillShow(ctx context.Context, e *env, id string) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	s, err := registry.Get(ctx, pool, id)
	if err != nil {
		return e.skillError(err)
	}
	h, err := registry.History(ctx, pool, id)
	if err != nil {
		return e.skillError(err)
	}
	if e.json {
		return printJSON(e, skillShow{s, h})
	}
	w := e.io.out
	fmt.Fprintf(w, "skill:      %s %s (%s)\nstatus:     %s\npublisher:  %s, key %s\nartifact:   %s\npayload:    %s\n",
		s.ID, s.Version, strings.Join(s.Tools, ", "), s.Status, s.Publisher, s.KeyID, s.ArtifactDigest, s.PayloadDigest)
	fmt.Fprintf(w, "installed:  by %s\napprovals:  %s\n", s.InstalledBy, orNone(strings.Join(s.Approvals, ", ")))
	printFailedChecks(w, s.FailedChecks)
	fmt.Fprintln(w, "history:")
	for _, ev := range h {
		fmt.Fprintf(w, "  %3d  %s  %-18s %s\n", ev.Version, ev.RecordedAt.UTC().Format("2006-01-02T15:04:05Z"), ev.Type, ev.Actor)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// printFailedChecks prints a skill's failed audit checks (a JSON array of
// audit.Check, as ledger.skills keeps them) one a line, as install does;
// what does not decode is printed as it is.
func printFailedChecks(w io.Writer, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "[]" || string(raw) == "null" {
		return
	}
	var checks []audit.Check
	if err := json.Unmarshal(raw, &checks); err != nil {
		fmt.Fprintf(w, "failed:     %s\n", raw)
		return
	}
	fmt.Fprintf(w, "failed:     %d checks\n", len(checks))
	for _, c := range checks {
		fmt.Fprintf(w, "  %s\n", checkLine(c))
	}
}

// checkLine is one failed check: "name [target]: detail".
func checkLine(c audit.Check) string {
	line := c.Name
	if c.Target != "" {
		line += " [" + c.Target + "]"
	}
	if c.Detail != "" {
		line += ": " + c.Detail
	}
	return line
}
