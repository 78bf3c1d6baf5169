package config

import "testing"

// TestConsoleReplicaURL: the console reads from database.replica_url as
// the signed-in login, so the URL's own user and password are dropped;
// unset, the console has no replica.
func TestConsoleReplicaURL(t *testing.T) {
	var c Config
	if u, err := c.ConsoleReplicaURL(); err != nil || u != "" {
		t.Fatalf("unset: %q, %v", u, err)
	}
	c.Database.ReplicaURL = "postgres://auditor:secret@db2:5432,db1:5432/ledger?target_session_attrs=prefer-standby"
	u, err := c.ConsoleReplicaURL()
	if err != nil || u != "postgres://db2:5432,db1:5432/ledger?target_session_attrs=prefer-standby" {
		t.Fatalf("%q, %v", u, err)
	}
	c.Database.ReplicaURL = "postgres://db2:5432/%zz"
	if _, err := c.ConsoleReplicaURL(); err == nil {
		t.Fatal("a malformed replica URL was accepted")
	}
}
