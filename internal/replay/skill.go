package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/internal/skill/gate"
	"github.com/execledger/execledger/internal/skill/manifest"
	"github.com/execledger/execledger/internal/skill/registry"
	"github.com/execledger/execledger/ledger"
)

// SkillConfig is Config for a call of an installed skill's tool: the
// module is read from the ledger's skill storage (ledger.skill_files) of
// the artifact the attestation names, and must have the digest the
// attestation recorded; its manifest gives the entrypoint and the quotas,
// within [wasm]'s limits, as the executor's gate applies them. wasmrun
// reads modules from files: the module is written to a temporary file,
// which cleanup removes.
func SkillConfig(ctx context.Context, w config.Wasm, db ledger.DBTX, p attest.Execution) (cfg wasmrun.Config, digest string, cleanup func(), err error) {
	ran, _ := p.Enforcement["module_digest"].(string)
	cfg = wasmrun.Config{Engine: w.Engine, MemoryLimitPages: uint32(w.MemoryLimitPages), FuelLimit: int64(w.FuelLimit),
		MaxModuleBytes: w.MaxModuleBytes, Timeout: w.Timeout.Duration}
	s := p.Skill
	files, err := registry.Files(ctx, db, s.ArtifactDigest)
	if err != nil {
		return cfg, "", nil, fmt.Errorf("installed skill %s (artifact %s): %w", s.ID, s.ArtifactDigest, err)
	}
	m, err := manifest.Parse(files[manifest.FileName])
	if err != nil {
		return cfg, "", nil, fmt.Errorf("installed skill %s: %s: %w", s.ID, manifest.FileName, err)
	}
	var mt *manifest.Tool
	for i := range m.Tools {
		if m.Tools[i].ID == p.Tool {
			mt = &m.Tools[i]
		}
	}
	if mt == nil {
		return cfg, "", nil, fmt.Errorf("installed skill %s (artifact %s) has no tool %s", s.ID, s.ArtifactDigest, p.Tool)
	}
	wasm := files[mt.Module]
	sum := sha256.Sum256(wasm)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != ran {
		return cfg, "", nil, fmt.Errorf("module digest mismatch: installed skill %s stores %s as %s, the attested call ran %s", s.ID, mt.Module, got, ran)
	}
	dir, err := os.MkdirTemp("", "execledger-replay-")
	if err != nil {
		return cfg, "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "module.wasm")
	if err := os.WriteFile(path, wasm, 0o600); err != nil {
		cleanup()
		return cfg, "", nil, err
	}
	mod := gate.ModuleOf(m, mt, wasm, gate.LimitsOf(w))
	mod.Path = path
	cfg.Modules = []wasmrun.Module{mod}
	return cfg, ran, cleanup, nil
}
