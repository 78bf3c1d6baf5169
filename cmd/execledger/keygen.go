package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/ledger"
)

const keygenUsage = "execledger keygen [--out FILE] | --note [--name ORIGIN] [--out FILE] | --witness --name NAME [--out FILE]"

// defaultLogOrigin names a log whose key was made without --name.
const defaultLogOrigin = "execledger.local/log"

func runKeygen(_ context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("execledger keygen", flag.ContinueOnError)
	fs.SetOutput(e.io.err)
	out := fs.String("out", "", "private key file to write (mode 0600); the public key goes to FILE.pub (default execledger-attest.key, execledger-log.key or execledger-witness.key)")
	noteKey := fs.Bool("note", false, "write the Merkle log's note key, which signs checkpoints ([sealer] note_key_file); its name is the log's origin")
	witness := fs.Bool("witness", false, "write a witness's note key, which cosigns checkpoints (execledger witness --key)")
	name := fs.String("name", "", "the key's name: the log's origin with --note (default "+defaultLogOrigin+"), the witness's name with --witness")
	if _, code, ok := e.parseArgs(fs, args, 0, keygenUsage); !ok {
		return code
	}
	switch {
	case *noteKey && *witness:
		return e.fail(exitUsage, "--note and --witness are different keys: give one\nusage: %s", keygenUsage)
	case *noteKey || *witness:
		return keygenNote(e, *witness, *name, *out)
	case *name != "":
		return e.fail(exitUsage, "--name names a note key: give --note or --witness\nusage: %s", keygenUsage)
	}
	if *out == "" {
		*out = "execledger-attest.key"
	}
	id, err := attest.GenerateKeyFiles(*out, *out+".pub")
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "key %s\nprivate: %s\npublic:  %s.pub\n", id, *out, *out)
	return exitOK
}

// keygenNote writes a log or witness note key.
func keygenNote(e *env, witness bool, name, out string) int {
	gen, kind := ledger.GenerateNoteKey, "log"
	switch {
	case witness && name == "":
		return e.fail(exitUsage, "--witness needs --name NAME (how the witness signs its cosignatures, e.g. witness.example.com)")
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
		return e.fail(exitError, "%v", err)
	}
	fmt.Fprintf(e.io.out, "%s key %s\nprivate: %s\npublic:  %s.pub\n", kind, vkey, out, out)
	return exitOK
}
