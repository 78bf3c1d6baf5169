package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/skill/registry"
)

func newSkillTrustCmd(e *env) *cobra.Command {
	return newGroupCmd("trust", "The publisher keys the trust store holds",
		`Trust adds a publisher's key to the trust store, revokes one for good, and lists them.`,
		`  execledger skill trust add acme acme.key.pub
  execledger skill trust list`,
		newSkillTrustAddCmd(e), newSkillTrustRevokeCmd(e), newSkillTrustListCmd(e))
}

func newSkillTrustAddCmd(e *env) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:     "add PUBLISHER PUBKEY_FILE",
		Short:   "Trust a publisher's Ed25519 public key (the .pub file execledger keygen writes)",
		Example: `  execledger skill trust add acme acme.key.pub --note "from acme's release page"`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSkillTrustAdd(cmd.Context(), e, args[0], args[1], note)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why (recorded in trust.key_added)")
	e.configFlag(cmd)
	return cmd
}

func newSkillTrustRevokeCmd(e *env) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     "revoke KEY_ID",
		Short:   "Revoke a key for good: the skills it signed are disabled at once",
		Example: `  execledger skill trust revoke ed25519:9c1f... --reason "key leaked"`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSkillTrustRevoke(cmd.Context(), e, args[0], reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in trust.key_revoked)")
	e.configFlag(cmd)
	return cmd
}

func newSkillTrustListCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "The trust store, revoked keys included",
		Example: `  execledger skill trust list
  execledger skill trust list --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSkillTrustList(cmd.Context(), e)
		},
	}
	e.jsonFlag(cmd, "print a JSON array")
	e.configFlag(cmd)
	return cmd
}

func runSkillTrustAdd(ctx context.Context, e *env, publisher, pubFile, note string) error {
	pub, err := attest.LoadPublicKey(pubFile)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	id := attest.PublicKeyID(pub)
	if err := registry.TrustAdd(ctx, pool, publisher, id, pub, note); err != nil {
		return e.skillError(err)
	}
	fmt.Fprintf(e.io.out, "trusted key %s of publisher %s\n", id, publisher)
	return nil
}

func runSkillTrustRevoke(ctx context.Context, e *env, keyID, reason string) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	n, err := registry.TrustRevoke(ctx, pool, keyID, reason)
	if err != nil {
		return e.skillError(err)
	}
	fmt.Fprintf(e.io.out, "revoked key %s; %d skill(s) it signed disabled\n", keyID, n)
	return nil
}

func runSkillTrustList(ctx context.Context, e *env) error {
	_, pool, err := e.connect(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	keys, err := registry.Keys(ctx, pool)
	if err != nil {
		return e.skillError(err)
	}
	if e.json {
		if keys == nil {
			keys = []registry.Key{}
		}
		return printJSON(e, keys)
	}
	tw := tabwriter.NewWriter(e.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PUBLISHER\tKEY\tSOURCE\tADDED BY\tSTATE")
	for _, k := range keys {
		state := "trusted"
		if k.RevokedAt != nil {
			state = "revoked " + k.RevokedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Publisher, k.KeyID, k.Source, k.AddedBy, state)
	}
	if err := tw.Flush(); err != nil {
		return fail(exitError, "%v", err)
	}
	return nil
}
