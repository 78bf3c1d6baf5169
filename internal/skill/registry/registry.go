package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// Result is what a lifecycle request did: OK false when the lifecycle
// refused it (recorded as skill.refused), with the reason in Message.
type Result struct {
	OK      bool   `json:"ok"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// ErrNotFound is returned for a skill id that was never installed.
var ErrNotFound = errors.New("registry: no such skill")

// Install is an artifact that has been opened and whose signature has
// been verified, ready to record.
type Install struct {
	Digest        string // "sha256:<hex>" of the archive
	SkillID       string
	Version       string
	Publisher     string
	KeyID         string
	PublicKey     []byte
	PayloadDigest string // "sha256:<hex>"
	Signature     []byte
	Tools         []string
	Size          int64             // the archive's bytes
	Files         map[string][]byte // every file of the archive
	TOFU          bool              // pin the key if its publisher has none yet
}

// InstallArtifact records in as the skill's current artifact, state
// installed. Its audit is recorded next, by RecordAudit.
func InstallArtifact(ctx context.Context, db ledger.DBTX, in Install) (Result, error) {
	paths := slices.Sorted(maps.Keys(in.Files))
	contents := make([][]byte, len(paths))
	for i, p := range paths {
		contents[i] = in.Files[p]
	}
	return call(ctx, db, "install", sqlInstall, in.Digest, in.SkillID, in.Version, in.Publisher, in.KeyID, in.PublicKey,
		in.PayloadDigest, in.Signature, in.Tools, in.Size, paths, contents, in.TOFU)
}

// Triggers of an audit, as RecordAudit records them.
const (
	TriggerInstall    = "install"
	TriggerSchedule   = "schedule"
	TriggerTrustStore = "trust_store"
	TriggerOperator   = "operator"
)

// RecordAudit records an audit of the skill's current artifact (digest):
// passed verifies a newly installed skill; a failure quarantines it.
// checks is marshalled to a JSON array of {name, passed, ...} objects.
func RecordAudit(ctx context.Context, db ledger.DBTX, skillID, digest string, passed bool, checks any, trigger string) (Result, error) {
	b, err := json.Marshal(checks)
	if err != nil {
		return Result{}, fmt.Errorf("registry: audit checks: %w", err)
	}
	return call(ctx, db, "record audit", sqlAudit, skillID, digest, passed, string(b), trigger)
}

// Approve records the caller's approval of the quarantined artifact digest.
func Approve(ctx context.Context, db ledger.DBTX, skillID, digest, note string) (Result, error) {
	return call(ctx, db, "approve", sqlApprove, skillID, digest, nullable(note))
}

// Enable lets a cleared skill's tools run.
func Enable(ctx context.Context, db ledger.DBTX, skillID, note string) (Result, error) {
	return call(ctx, db, "enable", sqlEnable, skillID, nullable(note))
}

// Disable stops a skill's tools from running.
func Disable(ctx context.Context, db ledger.DBTX, skillID, reason string) (Result, error) {
	return call(ctx, db, "disable", sqlDisable, skillID, nullable(reason))
}

// Rollback makes the skill's previous artifact current again, disabled.
func Rollback(ctx context.Context, db ledger.DBTX, skillID, reason string) (Result, error) {
	return call(ctx, db, "rollback", sqlRollbk, skillID, nullable(reason))
}

// Remove retires a skill that is not enabled.
func Remove(ctx context.Context, db ledger.DBTX, skillID, reason string) (Result, error) {
	return call(ctx, db, "remove", sqlRemove, skillID, nullable(reason))
}

func call(ctx context.Context, db ledger.DBTX, what, sql string, args ...any) (Result, error) {
	var r Result
	if err := db.QueryRow(ctx, sql, args...).Scan(&r.OK, &r.Status, &r.Message); err != nil {
		return Result{}, fmt.Errorf("skill %s: %w", what, err)
	}
	return r, nil
}

// nullable is NULL for "".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Skill is a skill's current state (ledger.skills and its artifact).
type Skill struct {
	ID             string          `json:"skill_id"`
	Status         string          `json:"status"`
	Version        string          `json:"version"`
	Publisher      string          `json:"publisher"`
	KeyID          string          `json:"key_id"`
	ArtifactDigest string          `json:"artifact_digest"`
	PayloadDigest  string          `json:"payload_digest"`
	InstalledBy    string          `json:"installed_by"`
	Approvals      []string        `json:"approvals"`
	FailedChecks   json.RawMessage `json:"failed_checks"`
	Cleared        bool            `json:"cleared"`
	PreviousDigest *string         `json:"previous_digest,omitempty"`
	Tools          []string        `json:"tools"`
	StreamVersion  int64           `json:"stream_version"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

// List returns every skill ever installed, removed ones included, by id.
func List(ctx context.Context, db ledger.DBTX) ([]Skill, error) {
	rows, err := db.Query(ctx, sqlSkillsAll)
	if err != nil {
		return nil, fmt.Errorf("skill list: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanSkill)
	if err != nil {
		return nil, fmt.Errorf("skill list: %w", err)
	}
	return out, nil
}

// Get returns one skill, or ErrNotFound.
func Get(ctx context.Context, db ledger.DBTX, skillID string) (Skill, error) {
	rows, err := db.Query(ctx, sqlSkillOne, skillID)
	if err != nil {
		return Skill{}, fmt.Errorf("skill show: %w", err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, scanSkill)
	if errors.Is(err, pgx.ErrNoRows) {
		return Skill{}, fmt.Errorf("%w: %s", ErrNotFound, skillID)
	}
	if err != nil {
		return Skill{}, fmt.Errorf("skill show: %w", err)
	}
	return s, nil
}

func scanSkill(row pgx.CollectableRow) (Skill, error) {
	var s Skill
	var failed string
	err := row.Scan(&s.ID, &s.Status, &s.Version, &s.Publisher, &s.KeyID, &s.ArtifactDigest, &s.PayloadDigest, &s.InstalledBy,
		&s.Approvals, &failed, &s.Cleared, &s.PreviousDigest, &s.Tools, &s.StreamVersion, &s.UpdatedAt)
	s.FailedChecks = json.RawMessage(failed)
	return s, err
}

// Event is one event of a skill's stream.
type Event struct {
	Version    int64           `json:"version"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	Actor      string          `json:"actor"`
	RecordedAt time.Time       `json:"recorded_at"`
}

// History returns the events of stream skill:<id>, oldest first.
func History(ctx context.Context, db ledger.DBTX, skillID string) ([]Event, error) {
	rows, err := db.Query(ctx, sqlHistory, skillID)
	if err != nil {
		return nil, fmt.Errorf("skill history: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		var e Event
		var payload string
		var actor *string
		err := row.Scan(&e.Version, &e.Type, &payload, &actor, &e.RecordedAt)
		e.Payload = json.RawMessage(payload)
		if actor != nil {
			e.Actor = *actor
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("skill history: %w", err)
	}
	return out, nil
}
