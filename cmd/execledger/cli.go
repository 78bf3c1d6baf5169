package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// usageTemplate is cobra's, except that a command with subcommands shows
// "COMMAND" instead of a usage line of its own: it runs none of its own.
const usageTemplate = `Usage:{{if .HasAvailableSubCommands}}
  {{.CommandPath}} COMMAND{{else if .Runnable}}
  {{.UseLine}}{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if not .AllChildCommandsHaveGroup}}

More:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} COMMAND --help" for more information about a command.{{end}}
`

// usageLine is the usage line a usage error ends with.
func usageLine(cmd *cobra.Command) string {
	if cmd.HasAvailableSubCommands() {
		return cmd.CommandPath() + " COMMAND"
	}
	return cmd.UseLine()
}

// newGroupCmd makes a command that only holds subcommands (projector,
// skill, skill trust): run without one, or with an unknown one, it is a
// usage error.
func newGroupCmd(use, short, long, example string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cobra.ArbitraryArgs,
		RunE:    groupRun,
	}
	cmd.AddCommand(subs...)
	return cmd
}

// groupRun is the RunE of a command that only holds subcommands: cobra
// calls it when args name none of them.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		if !cmd.HasParent() {
			return fail(exitUsage, "missing command")
		}
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		return fail(exitUsage, "%s: missing command (one of %s)", commandName(cmd), strings.Join(names, ", "))
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return fail(exitUsage, "%s", msg)
}

// commandName is cmd's path without the program's name: "skill trust add".
func commandName(cmd *cobra.Command) string {
	path := cmd.CommandPath()
	if _, rest, ok := strings.Cut(path, " "); ok {
		return rest
	}
	return path
}

// newHelpCmd replaces cobra's help command, which shows the root's help
// for an unknown topic, by one that calls that a usage error.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]...",
		Short: "Help about any command",
		Long:  "Help prints the help of any command, the same as COMMAND --help.",
		Example: `  execledger help
  execledger help skill trust add`,
		RunE: func(_ *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return fail(exitUsage, "unknown help topic %q", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, c := range target.Commands() {
				if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// finishTree gives every command of the tree the same handling: a typo
// of a subcommand gets a suggestion, an error a RunE returns that is not
// a *cmdError is a failure (exitError), and a refusal for lack of
// privilege says which role the login lacks (explainDenial). The plain
// errors that reach printError are then cobra's own (flags, arguments):
// usage errors.
func (e *env) finishTree(c *cobra.Command) {
	c.SuggestionsMinimumDistance = 2
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			err := run(cmd, args)
			var ce *cmdError
			if err != nil && !errors.As(err, &ce) {
				err = &cmdError{code: exitError, msg: err.Error(), err: err}
			}
			if err != nil {
				err = explainDenial(cmd, e.login, err)
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		e.finishTree(sub)
	}
}

// initCompletionCmd adds cobra's completion command now, rather than when
// the root executes, to give it and its subcommands examples.
func initCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args, c.RunE = cobra.ArbitraryArgs, groupRun
		c.Example = `  source <(execledger completion bash)
  execledger completion zsh > "${fpath[1]}/_execledger"`
		for _, sh := range c.Commands() {
			sh.Example = fmt.Sprintf("  execledger completion %s > execledger.%s", sh.Name(), sh.Name())
		}
	}
}

// configFlag declares --config on cmd.
func (e *env) configFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&e.config, "config", e.lookup("EXECLEDGER_CONFIG"), "the configuration `FILE` (TOML); default $EXECLEDGER_CONFIG")
}

// unusedConfigFlag declares a hidden --config on a command that reads no
// configuration, which it has always accepted.
func (e *env) unusedConfigFlag(cmd *cobra.Command) {
	e.configFlag(cmd)
	if err := cmd.Flags().MarkHidden("config"); err != nil {
		panic(err)
	}
}

// jsonFlag declares cmd's own --json, which says what cmd prints as JSON;
// it sets the same e.json as the root's.
func (e *env) jsonFlag(cmd *cobra.Command, usage string) {
	cmd.Flags().BoolVar(&e.json, "json", false, usage)
}

// enumFlag makes the shell complete flag name of cmd with values.
func enumFlag(cmd *cobra.Command, name string, values ...string) {
	if err := cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(err) // a flag cmd does not declare: a programming error
	}
}
