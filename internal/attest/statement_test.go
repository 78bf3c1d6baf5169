package attest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"
)

// testKey returns a fixed key so that signatures and golden files are
// reproducible (Ed25519 signing is deterministic).
func testKey(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("execledger attest test key " + name))
	return ed25519.NewKeyFromSeed(seed[:])
}

var (
	testInput  = []byte(`{"command":"ls","args":["-la"],"cwd":"."}`)
	testOutput = []byte("{\"exit_code\":0,\"stdout\":\"total 0\\n\",\"stderr\":\"\"}")
)

// allowedExecution has every field set, optional ones included.
func allowedExecution() Execution {
	exit := 0
	cet := time.FixedZone("CET", 3600)
	return Execution{
		AttestationID:  "req-01J9Z3-1",
		RequestID:      "req-01J9Z3",
		Tool:           "process.run",
		Principal:      "agent:builder",
		RunID:          "run-42",
		Tier:           "C",
		Executor:       "sandbox_tier_c_linux_bubblewrap",
		ExecutorHost:   "executor-1",
		Enforcement:    map[string]any{"network": "none", "cpu_ms": 2000, "memory_bytes": 268435456, "bwrap": true},
		PolicyDigest:   "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Decision:       DecisionAllow,
		DecisionReason: "policy.allow.process_run",
		ApprovalRef:    "approval-7",
		StartedAt:      time.Date(2026, 3, 14, 15, 9, 26, 535897932, cet),
		FinishedAt:     time.Date(2026, 3, 14, 15, 9, 27, 100000000, cet),
		TimedOut:       false,
		Success:        true,
		ExitStatus:     &exit,
		ErrorKind:      "",
		Resources:      map[string]int64{"cpu_ms": 12, "max_rss_bytes": 4 << 20, "wall_ms": 564},
		PreviousDigest: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	}
}

// deniedExecution is a policy denial: no tier, no output, optional fields empty.
func deniedExecution() Execution {
	at := time.Date(2026, 3, 14, 14, 0, 0, 0, time.UTC)
	return Execution{
		AttestationID:  "req-01J9Z4-1",
		RequestID:      "req-01J9Z4",
		Tool:           "process.run",
		Principal:      "agent:builder",
		Executor:       ExecutorPolicy,
		ExecutorHost:   "execledger-1",
		PolicyDigest:   "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Decision:       DecisionDeny,
		DecisionReason: "policy.deny.interpreter",
		StartedAt:      at,
		FinishedAt:     at,
	}
}

func TestNewStatementSubjectsAreExactBytes(t *testing.T) {
	st := NewStatement(testInput, testOutput, allowedExecution())
	if st.Type != StatementType || st.PredicateType != PredicateType {
		t.Fatalf("types = %q, %q", st.Type, st.PredicateType)
	}
	want := map[string]string{SubjectInput: sha256Hex(testInput), SubjectOutput: sha256Hex(testOutput)}
	if len(st.Subject) != 2 {
		t.Fatalf("%d subjects, want 2", len(st.Subject))
	}
	for _, s := range st.Subject {
		if s.Digest["sha256"] != want[s.Name] {
			t.Errorf("subject %q sha256 = %q, want %q", s.Name, s.Digest["sha256"], want[s.Name])
		}
	}
	if err := st.VerifySubjects(testInput, testOutput); err != nil {
		t.Fatalf("VerifySubjects: %v", err)
	}
	if got := st.Predicate.StartedAt.Location(); got != time.UTC {
		t.Errorf("StartedAt location = %v, want UTC", got)
	}
}

func TestVerifySubjectsRejectsChangedByte(t *testing.T) {
	st := NewStatement(testInput, testOutput, allowedExecution())
	for _, i := range []int{0, len(testInput) - 1} {
		in := append([]byte(nil), testInput...)
		in[i] ^= 0x01
		if err := st.VerifySubjects(in, testOutput); !errors.Is(err, ErrSubjectMismatch) || !strings.Contains(err.Error(), "input") {
			t.Errorf("input byte %d changed: err = %v, want input %v", i, err, ErrSubjectMismatch)
		}
	}
	out := append([]byte(nil), testOutput...)
	out[len(out)-1] ^= 0x01
	if err := st.VerifySubjects(testInput, out); !errors.Is(err, ErrSubjectMismatch) || !strings.Contains(err.Error(), "output") {
		t.Errorf("output byte changed: err = %v, want output %v", err, ErrSubjectMismatch)
	}
	// Swapping input and output must not pass either.
	if err := st.VerifySubjects(testOutput, testInput); !errors.Is(err, ErrSubjectMismatch) {
		t.Errorf("swapped: err = %v, want %v", err, ErrSubjectMismatch)
	}
}

func TestNoOutputIsDigestOfEmpty(t *testing.T) {
	st := NewStatement(testInput, nil, deniedExecution())
	out, err := st.subject(SubjectOutput)
	if err != nil {
		t.Fatal(err)
	}
	const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if out.Digest["sha256"] != emptySHA256 {
		t.Errorf("output digest = %q, want sha256 of \"\"", out.Digest["sha256"])
	}
	if err := st.VerifySubjects(testInput, []byte{}); err != nil {
		t.Errorf("VerifySubjects with empty output: %v", err)
	}
	if err := st.VerifySubjects(testInput, []byte{0}); !errors.Is(err, ErrSubjectMismatch) {
		t.Errorf("VerifySubjects with a NUL output: err = %v, want %v", err, ErrSubjectMismatch)
	}
}

func TestDigest(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	} {
		if got := Digest([]byte(c.in)); got != c.want {
			t.Errorf("Digest(%q) = %q, want %q", c.in, got, c.want)
		}
		if !validDigest(c.want) {
			t.Errorf("validDigest(%q) = false", c.want)
		}
	}
	for _, bad := range []string{"", "sha256:", "sha512:" + strings.Repeat("0", 64), "sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("0", 63)} {
		if validDigest(bad) {
			t.Errorf("validDigest(%q) = true", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Statement)
		want   error
	}{
		{"ok", func(*Statement) {}, nil},
		{"deny ok", func(st *Statement) { st.Predicate = deniedExecution() }, nil},
		{"statement v0.1", func(st *Statement) { st.Type = "https://in-toto.io/Statement/v0.1" }, ErrStatementType},
		{"other predicate", func(st *Statement) { st.PredicateType = "https://slsa.dev/provenance/v1" }, ErrPredicateType},
		{"no attestation id", func(st *Statement) { st.Predicate.AttestationID = "" }, ErrInvalidStatement},
		{"no request id", func(st *Statement) { st.Predicate.RequestID = "" }, ErrInvalidStatement},
		{"no tool", func(st *Statement) { st.Predicate.Tool = "" }, ErrInvalidStatement},
		{"no executor", func(st *Statement) { st.Predicate.Executor = "" }, ErrInvalidStatement},
		{"bad decision", func(st *Statement) { st.Predicate.Decision = "Allow" }, ErrInvalidStatement},
		{"denied success", func(st *Statement) { st.Predicate.Decision = DecisionDeny }, ErrInvalidStatement},
		{"no start", func(st *Statement) { st.Predicate.StartedAt = time.Time{} }, ErrInvalidStatement},
		{"ends before start", func(st *Statement) { st.Predicate.FinishedAt = st.Predicate.StartedAt.Add(-time.Nanosecond) }, ErrInvalidStatement},
		{"bad previous digest", func(st *Statement) { st.Predicate.PreviousDigest = "e3b0c442" }, ErrInvalidStatement},
		{"one subject", func(st *Statement) { st.Subject = st.Subject[:1] }, ErrInvalidStatement},
		{"duplicate subject", func(st *Statement) { st.Subject[1].Name = SubjectInput }, ErrInvalidStatement},
		{"uppercase hex", func(st *Statement) {
			st.Subject[0].Digest = map[string]string{"sha256": strings.ToUpper(st.Subject[0].Digest["sha256"])}
		}, ErrInvalidStatement},
		{"extra digest", func(st *Statement) { st.Subject[0].Digest = map[string]string{"sha256": sha256Hex(nil), "md5": "x"} }, ErrInvalidStatement},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := NewStatement(testInput, testOutput, allowedExecution())
			c.mutate(&st)
			err := st.Validate()
			if c.want == nil && err != nil || !errors.Is(err, c.want) {
				t.Fatalf("Validate() = %v, want %v", err, c.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "attest: ") {
				t.Errorf("error %q lacks the attest: prefix", err)
			}
		})
	}
}
