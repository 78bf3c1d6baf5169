package policy

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Watcher reloads policy files when their text changes and has stayed so
// for one more Interval (a torn read of a file being written is never put
// in force). A change that
// does not load (a parse error, a policy that can never apply: [Check])
// is refused with one log line per distinct text, and the engine in
// force stays so; a file that cannot be read is treated the same way.
type Watcher struct {
	Paths    []string
	Interval time.Duration // how often the files are read
	Logger   *slog.Logger
	// Apply puts a new engine in force; when it fails the previous one
	// stays, and the same text is tried again at the next read.
	Apply func(ctx context.Context, e *Engine) error
}

// Run watches until ctx ends; current is the engine in force.
func (w Watcher) Run(ctx context.Context, current *Engine) {
	inForce := current.Digest()
	refused, pending := "", ""
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sources, err := readSources(w.Paths)
		if err != nil {
			if msg := err.Error(); msg != refused {
				refused = msg
				w.Logger.Error("policy: cannot read the policy files; the policy in force stays", slog.String("policy_digest", inForce), slog.Any("error", err))
			}
			continue
		}
		digest := digestSources(sources)
		if digest == inForce || digest == refused {
			pending = ""
			continue
		}
		if digest != pending {
			// A text is taken once two reads a tick apart agree: a read
			// may catch a file half-written (an editor that truncates,
			// then writes), whose first half can parse as a smaller
			// policy set.
			pending = digest
			continue
		}
		pending = ""
		e, problems := Check(sources)
		if len(problems) > 0 {
			refused = digest
			lines := make([]string, len(problems))
			for i, p := range problems {
				lines[i] = p.String()
			}
			w.Logger.Error("policy: refused the edit; the policy in force stays", slog.String("policy_digest", inForce),
				slog.String("problems", strings.Join(lines, "; ")), slog.String("check", "execledger policy check "+strings.Join(w.Paths, " ")))
			continue
		}
		if err := w.Apply(ctx, e); err != nil {
			if ctx.Err() == nil {
				w.Logger.Error("policy: could not put the edit in force; the policy in force stays", slog.String("policy_digest", inForce), slog.Any("error", err))
			}
			continue
		}
		w.Logger.Info("policy: reloaded", slog.String("previous_digest", inForce), slog.String("policy_digest", e.Digest()),
			slog.Int("policies", len(e.PolicyIDs())))
		inForce, refused = e.Digest(), ""
	}
}

// readSources reads paths as [Load] names them.
func readSources(paths []string) ([]Source, error) {
	out := make([]Source, 0, len(paths))
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, Source{Name: filepath.Base(p), Text: text})
	}
	return out, nil
}
