package main

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/config"
)

// TestDevListenersMoveOffABusyDefault: a second dev finds its default
// ports taken (by the first one) and takes free ones, saying which; a
// port the configuration names that is taken is an error.
func TestDevListenersMoveOffABusyDefault(t *testing.T) {
	t.Parallel()
	busy := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln.Addr().String()
	}
	def := config.Default()
	def.Serve.Listen, def.Console.Listen = busy(), busy()
	cfg := def
	cfg.Console.Enabled = true
	ops, con, notes, err := devListeners(&cfg, def)
	if err != nil {
		t.Fatal(err)
	}
	defer closeListeners(ops, con)
	if cfg.Serve.Listen == def.Serve.Listen || cfg.Serve.Listen != ops.Addr().String() ||
		cfg.Console.Listen == def.Console.Listen || cfg.Console.Listen != con.Addr().String() {
		t.Errorf("addresses: serve %s console %s (busy %s, %s)", cfg.Serve.Listen, cfg.Console.Listen, def.Serve.Listen, def.Console.Listen)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "serve.listen "+def.Serve.Listen+" is in use") ||
		!strings.HasSuffix(notes[0], "took "+cfg.Serve.Listen) || !strings.Contains(notes[1], "console.listen") {
		t.Errorf("notes: %q", notes)
	}
	// Free defaults are taken as they are, without a note.
	free := config.Default()
	free.Serve.Listen, free.Console.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg = free
	cfg.Console.Enabled = false
	ops, con, notes, err = devListeners(&cfg, config.Default())
	if err != nil || con != nil || len(notes) != 0 || cfg.Serve.Listen != ops.Addr().String() {
		t.Errorf("free ports: %v %v %q %v", ops, con, notes, err)
	}
	closeListeners(ops, con)
}

// TestDevRefusesABusyConfiguredPortBeforeItsBanner: a port the
// configuration names that is taken ends dev at once, before it prints
// that it serves (once it did, then died on the bind).
func TestDevRefusesABusyConfiguredPortBeforeItsBanner(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	parent, err := os.MkdirTemp("", "execledger-dev-ports-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	r := execute(t, []string{"EXECLEDGER_DEV_DATA_DIR=" + parent + "/pgdata", "EXECLEDGER_SERVE_LISTEN=" + ln.Addr().String()}, "", "dev")
	if r.code != exitError || !strings.Contains(r.stderr, "serve.listen: ") || !strings.Contains(r.stderr, "address already in use") ||
		!strings.Contains(r.stderr, "EXECLEDGER_SERVE_LISTEN") || strings.Contains(r.stdout, "Execledger dev:") || strings.Contains(r.stderr, "serving") {
		t.Errorf("dev on a busy serve.listen: %+v", r)
	}
	if _, err := os.Stat(parent + "/pgdata"); err == nil {
		t.Errorf("dev started PostgreSQL before it found its port taken")
	}
}
