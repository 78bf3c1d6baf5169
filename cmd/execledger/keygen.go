package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

// defaultLogOrigin names a log whose key was made without --name.
const defaultLogOrigin = "execledger.local/log"

// keygenFlags are keygen's flags.
type keygenFlags struct {
	out, name     string
	note, witness bool
}

func newKeygenCmd(e *env) *cobra.Command {
	var f keygenFlags
	cmd := &cobra.Command{
		Use:   "keygen [--out FILE] | --note [--name ORIGIN] | --witness --name NAME",
		Short: "Write an Ed25519 key pair: an attestation key, the log's note key or a witness's",
		Long: `Keygen writes an Ed25519 private key to FILE (mode 0600) and its public key to FILE.pub.
It never overwrites a key.

  (default)   the executor's attestation key ([attest] key_file)
  --note      the Merkle log's note key, which signs checkpoints ([sealer] note_key_file);
              its name is the log's origin
  --witness   a witness's note key, which cosigns checkpoints (execledger witness --key)`,
		Example: `  execledger keygen --out attest.key
  execledger keygen --note --name log.example.com --out log.key
  execledger keygen --witness --name witness.example.com --out witness.key`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			return runKeygen(e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "private key `FILE` to write (mode 0600); the public key goes to FILE.pub (default execledger-attest.key, execledger-log.key or execledger-witness.key)")
	fl.BoolVar(&f.note, "note", false, "write the Merkle log's note key, which signs checkpoints ([sealer] note_key_file); its name is the log's origin")
	fl.BoolVar(&f.witness, "witness", false, "write a witness's note key, which cosigns checkpoints (execledger witness --key)")
	fl.StringVar(&f.name, "name", "", "the key's `NAME`: the log's origin with --note (default "+defaultLogOrigin+"), the witness's name with --witness")
	return cmd
}

func runKeygen(e *env, f keygenFlags) error {
	switch {
	case f.note && f.witness:
		return fail(exitUsage, "--note and --witness are different keys: give one")
	case f.note || f.witness:
		return keygenNote(e, f.witness, f.name, f.out)
	case f.name != "":
		return fail(exitUsage, "--name names a note key: give --note or --witness")
	}
	out := f.out
	if out == "" {
		out = "execledger-attest.key"
	}
	id, err := attest.GenerateKeyFiles(out, out+".pub")
	if err != nil {
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "key %s\nprivate: %s\npublic:  %s.pub\n", id, out, out)
	return nil
}

// keygenNote writes a log or witness note key.
func keygenNote(e *env, witness bool, name, out string) error {
	gen, kind := ledger.GenerateNoteKey, "log"
	switch {
	case witness && name == "":
		return fail(exitUsage, "--witness needs --name NAME (how the witness signs its cosignatures, e.g. witness.example.com)")
	case witness:
		gen, kind = ledger.GenerateWitnessKey, "witness"
	case name == "":
		name = defaultLogOrigin
	}
	if out == "" {
		out = "execledger-" + kind + ".key"
	}
	vkey, err := gen(name, out)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "%s key %s\nprivate: %s\npublic:  %s.pub\n", kind, vkey, out, out)
	return nil
}
