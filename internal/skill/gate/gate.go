package gate

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"github.com/execledger/execledger/internal/config"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/internal/skill/vet"
)

// Limits are the configuration's upper bounds on a skill's quotas.
type Limits struct {
	Fuel        int64
	Timeout     time.Duration
	MemoryPages uint32
}

// LimitsOf are the limits [wasm] sets every installed skill's quotas
// within.
func LimitsOf(w config.Wasm) Limits {
	return Limits{Fuel: int64(w.FuelLimit), Timeout: w.Timeout.Duration, MemoryPages: uint32(w.MemoryLimitPages)}
}

// Gate is the executor's Skills. It is safe for concurrent use.
type Gate struct {
	host   *wasmrun.Host
	opts   vet.Options
	limits Limits
	logger *slog.Logger

	mu    sync.Mutex
	built map[string]*artifactTools // by payload digest
	// pending are the artifacts a claim found unbuilt, by payload digest,
	// with the files and trust it verified: Prepare builds them.
	pending map[string]pendingBuild
}

// pendingBuild is what building one artifact needs.
type pendingBuild struct {
	files   map[string][]byte
	sig     artifact.Signature
	trusted ed25519.PublicKey
	expect  vet.Expect
}

var _ executor.Skills = (*Gate)(nil)

// maxBuilt bounds the artifacts whose tools are kept built.
const maxBuilt = 64

// New returns a Gate building tools in host.
func New(host *wasmrun.Host, opts vet.Options, limits Limits, logger *slog.Logger) *Gate {
	return &Gate{host: host, opts: opts, limits: limits, logger: logger.With(slog.String("component", "skills")),
		built: map[string]*artifactTools{}, pending: map[string]pendingBuild{}}
}

// row is one tool's skill as the claim reads it.
type row struct {
	tool, skillID, status, digest, version, publisher, keyID, payloadDigest string
	publicKey, signature, trustedKey                                        []byte
	trustedPublisher                                                        *string
	revoked                                                                 bool
	approved                                                                bool // two principals approved this artifact out of quarantine
}

// Resolve implements executor.Skills.
func (g *Gate) Resolve(ctx context.Context, tx pgx.Tx, tools []string) (map[string]executor.SkillTool, error) {
	rows, err := readRows(ctx, tx, tools)
	if err != nil {
		return nil, err
	}
	var need []string
	for _, r := range rows {
		if r.status == "enabled" && !slices.Contains(need, r.digest) {
			need = append(need, r.digest)
		}
	}
	files, err := readFiles(ctx, tx, need)
	if err != nil {
		return nil, err
	}
	out := make(map[string]executor.SkillTool, len(rows))
	notReady := false
	for _, r := range rows {
		st, err := g.resolve(ctx, r, files[r.digest])
		if errors.Is(err, executor.ErrSkillsNotReady) {
			notReady = true
			continue
		}
		out[r.tool] = st
	}
	if notReady {
		return nil, executor.ErrSkillsNotReady
	}
	return out, nil
}

// Prepare implements executor.Skills: it audits and compiles the
// artifacts Resolve found unbuilt, from the files Resolve read and
// verified, outside the claim's transaction. An artifact that fails is
// kept as failed, so the next Resolve refuses its calls rather than
// asking again.
func (g *Gate) Prepare(ctx context.Context) error {
	g.mu.Lock()
	pending := g.pending
	g.pending = map[string]pendingBuild{}
	g.mu.Unlock()
	for d, p := range pending {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		b := g.build(ctx, p.files, p.sig, p.trusted, p.expect)
		g.mu.Lock()
		if _, ok := g.built[d]; !ok {
			g.evict()
			g.built[d] = b
		} else {
			b.close(ctx) // built meanwhile by another Prepare
		}
		g.mu.Unlock()
		g.logger.Info("skill built", slog.String("skill", p.expect.SkillID), slog.String("version", p.expect.Version),
			slog.Duration("took", time.Since(start)), slog.Bool("ok", b.err == nil && b.auditErr == nil))
	}
	return nil
}

// resolve decides one tool's call; executor.ErrSkillsNotReady when its
// artifact must be built first.
func (g *Gate) resolve(ctx context.Context, r row, files map[string][]byte) (executor.SkillTool, error) {
	st := executor.SkillTool{Skill: attest.Skill{ID: r.skillID, Version: r.version, Publisher: r.publisher,
		ArtifactDigest: r.digest, PublisherKey: r.keyID}}
	refuse := func(format string, args ...any) (executor.SkillTool, error) {
		st.Refusal = fmt.Sprintf("skill %s %s: ", r.skillID, r.version) + fmt.Sprintf(format, args...)
		return st, nil
	}
	switch {
	case r.status != "enabled":
		return refuse("is %s, not enabled", r.status)
	case r.trustedKey == nil:
		return refuse("its publisher key %s is not in the trust store", r.keyID)
	case r.revoked:
		return refuse("its publisher key %s has been revoked", r.keyID)
	case *r.trustedPublisher != r.publisher:
		return refuse("key %s is trusted for publisher %s, not %s", r.keyID, *r.trustedPublisher, r.publisher)
	case len(files) == 0:
		return refuse("its artifact's files are missing")
	}
	sig := artifact.Signature{Publisher: r.publisher, KeyID: r.keyID, PublicKey: ed25519.PublicKey(r.publicKey), Sig: r.signature}
	raw := artifact.PayloadDigest(files)
	d := artifact.PayloadDigestString(raw)
	if d != r.payloadDigest {
		return refuse("its stored files hash to %s, not the installed payload digest %s", d, r.payloadDigest)
	}
	st.Skill.PayloadDigest = d
	b, err := g.tools(files, raw, sig, ed25519.PublicKey(r.trustedKey), vet.Expect{SkillID: r.skillID, Version: r.version,
		Publisher: r.publisher, PayloadDigest: r.payloadDigest})
	if errors.Is(err, executor.ErrSkillsNotReady) {
		return st, err
	}
	if err != nil {
		return refuse("%v", err)
	}
	if b.auditErr != nil && !r.approved {
		return refuse("%v", b.auditErr)
	}
	t, ok := b.byTool[r.tool]
	if !ok {
		return refuse("its artifact defines no tool %s", r.tool)
	}
	st.Tool, st.RequiresApproval, st.Capabilities = t, t.requiresApproval, b.capabilities
	return st, nil
}

// tools returns the artifact's built tools; executor.ErrSkillsNotReady,
// with the artifact queued for Prepare, when it is not built yet. Files
// were hashed and the signature over them is verified again here, at
// every call: the cache holds only what building costs.
func (g *Gate) tools(files map[string][]byte, d [32]byte, sig artifact.Signature, trusted ed25519.PublicKey, expect vet.Expect) (*artifactTools, error) {
	if !trusted.Equal(sig.PublicKey) || !artifact.VerifySignature(trusted, d, sig.Sig) {
		return nil, fmt.Errorf("its signature does not verify under the trusted key %s", sig.KeyID)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if b, ok := g.built[expect.PayloadDigest]; ok {
		b.used = time.Now()
		return b, b.err
	}
	g.pending[expect.PayloadDigest] = pendingBuild{files: files, sig: sig, trusted: trusted, expect: expect}
	return nil, executor.ErrSkillsNotReady
}

// evict drops the least recently used artifact when the cache is full;
// its tools are closed once no call can still be using them.
func (g *Gate) evict() {
	if len(g.built) < maxBuilt {
		return
	}
	var oldest string
	for k, b := range g.built {
		if oldest == "" || b.used.Before(g.built[oldest].used) {
			oldest = k
		}
	}
	b := g.built[oldest]
	delete(g.built, oldest)
	time.AfterFunc(2*g.limits.Timeout+time.Minute, func() { b.close(context.Background()) })
}

// capabilityClasses names for Cedar's context the classes a grant holds.
func capabilityClasses(c wasmrun.Capabilities) []string {
	var out []string
	for _, x := range []struct {
		name string
		list []string
	}{{"network", c.HTTPHosts}, {"secrets_read", c.Secrets}, {"storage", c.StoragePrefixes}, {"channel", c.Channels}} {
		if len(x.list) > 0 {
			out = append(out, x.name)
		}
	}
	return out
}

// Close frees every built tool. Calls must have ended first (serve closes
// it after its executor has stopped).
func (g *Gate) Close(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, b := range g.built {
		b.close(ctx)
		delete(g.built, k)
	}
	return nil
}
