package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/skill/registry"
)

func skillTrustCommands() []command {
	return []command{
		{"add", "PUBLISHER PUBKEY_FILE [--note TEXT]", "trust a publisher's Ed25519 public key (the .pub file `execledger keygen` writes)", runSkillTrustAdd},
		{"revoke", "KEY_ID [--reason TEXT]", "revoke a key for good: the skills it signed are disabled at once", runSkillTrustRevoke},
		{"list", "[--json]", "the trust store, revoked keys included", runSkillTrustList},
	}
}

func runSkillTrust(ctx context.Context, e *env, args []string) int {
	return dispatch(ctx, e, "skill trust", skillTrustCommands(), args)
}

func runSkillTrustAdd(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "skill trust add")
	note := fs.String("note", "", "why (recorded in trust.key_added)")
	pos, code, ok := e.parseArgs(fs, args, 2, "execledger skill trust add PUBLISHER PUBKEY_FILE [--note TEXT]")
	if !ok {
		return code
	}
	pub, err := attest.LoadPublicKey(pos[1])
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	id := attest.PublicKeyID(pub)
	if err := registry.TrustAdd(ctx, pool, pos[0], id, pub, *note); err != nil {
		return e.skillError(err)
	}
	fmt.Fprintf(e.io.out, "trusted key %s of publisher %s\n", id, pos[0])
	return exitOK
}

func runSkillTrustRevoke(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "skill trust revoke")
	reason := fs.String("reason", "", "why (recorded in trust.key_revoked)")
	pos, code, ok := e.parseArgs(fs, args, 1, "execledger skill trust revoke KEY_ID [--reason TEXT]")
	if !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	n, err := registry.TrustRevoke(ctx, pool, pos[0], *reason)
	if err != nil {
		return e.skillError(err)
	}
	fmt.Fprintf(e.io.out, "revoked key %s; %d skill(s) it signed disabled\n", pos[0], n)
	return exitOK
}

func runSkillTrustList(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "skill trust list")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if _, code, ok := e.parseArgs(fs, args, 0, "execledger skill trust list [--json]"); !ok {
		return code
	}
	_, pool, err := e.connect(ctx, *cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	keys, err := registry.Keys(ctx, pool)
	if err != nil {
		return e.skillError(err)
	}
	if *asJSON {
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
		return e.fail(exitError, "%v", err)
	}
	return exitOK
}
