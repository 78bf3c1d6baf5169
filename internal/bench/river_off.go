//go:build !river

package bench

import "context"

// RiverLinked reports whether River is linked into this build: it is only
// with the river build tag (river_target.go), so that a binary built
// without it carries no River code; Config.Validate refuses the River
// systems here.
const RiverLinked = false

// DefaultSystem is every system this build links: Execledger alone.
const DefaultSystem = SystemExecledger

func newRiverTarget(context.Context, *Database, Config) (target, error) {
	return nil, errNoRiver
}

func newRiverAuditedTarget(context.Context, *Database, Config) (target, error) {
	return nil, errNoRiver
}
