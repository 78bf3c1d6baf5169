package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadPolicyIDs(t *testing.T) {
	t.Parallel()
	e := loadTestdata(t)
	want := []string{
		"allow-alice-echo-sleep", "forbid-bob-echo",
		"baseline-permit-echo", "baseline-forbid-sensitive-off-cli", "baseline-forbid-network-off-device",
		"process.cedar:0", "process.cedar:1",
		"permit-alice-acme-tools", "permit-alice-acme-skill",
		"broken-forbid-missing-attr", "broken-permit-missing-context",
	}
	if got := e.PolicyIDs(); !slices.Equal(got, want) {
		t.Fatalf("PolicyIDs() = %q, want %q", got, want)
	}
	srcs := e.Sources()
	if len(srcs) != len(testdataFiles) {
		t.Fatalf("Sources() has %d entries, want %d", len(srcs), len(testdataFiles))
	}
	for i, s := range srcs {
		if s.Name != testdataFiles[i] {
			t.Errorf("Sources()[%d].Name = %q, want %q", i, s.Name, testdataFiles[i])
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.cedar")
	if err := os.WriteFile(bad, []byte("permit(principal, action, resource);\n\npermit(principal, action resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		paths   []string
		wantErr []string
		is      error
	}{
		{name: "no files", paths: nil, wantErr: []string{"no policy files"}},
		{name: "missing file", paths: []string{filepath.Join(dir, "nope.cedar")}, wantErr: []string{"nope.cedar"}, is: fs.ErrNotExist},
		{name: "parse error names file and position", paths: []string{bad}, wantErr: []string{"parse bad.cedar", ":3:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Load(tt.paths...)
			if err == nil {
				t.Fatalf("Load() = %v, want error", e)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
		})
	}
}

func TestFromSourcesErrors(t *testing.T) {
	t.Parallel()
	const p = "permit(principal, action, resource);"
	tests := []struct {
		name    string
		sources []Source
		wantErr string
	}{
		{name: "empty list", sources: nil, wantErr: "no policy sources"},
		{name: "duplicate @id across files", sources: sources("a.cedar", `@id("x") `+p, "b.cedar", `@id("x") `+p), wantErr: `duplicate policy id "x" in b.cedar (first in a.cedar)`},
		{name: "duplicate @id within a file", sources: sources("a.cedar", `@id("x") `+p+`@id("x") `+p), wantErr: `duplicate policy id "x"`},
		{name: "@id clashes with generated id", sources: sources("a.cedar", p+`@id("a.cedar:0") `+p), wantErr: `duplicate policy id "a.cedar:0"`},
		{name: "empty @id", sources: sources("a.cedar", `@id("") `+p), wantErr: "empty @id"},
		{name: "duplicate source name", sources: sources("a.cedar", p, "a.cedar", ""), wantErr: `duplicate source name "a.cedar"`},
		{name: "empty source name", sources: sources("", p), wantErr: "empty name"},
		{name: "parse error", sources: sources("ok.cedar", p, "broken.cedar", "permit(principal, action, resource) when { 1 + };"), wantErr: "parse broken.cedar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := FromSources(tt.sources)
			if err == nil {
				t.Fatalf("FromSources() = %v, want error", e)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestEngineIsImmutable(t *testing.T) {
	t.Parallel()
	in := sources("a.cedar", `@id("x") permit(principal, action, resource);`)
	e, err := FromSources(in)
	if err != nil {
		t.Fatal(err)
	}
	digest := e.Digest()
	in[0].Text[0] = '#'
	out := e.Sources()
	out[0].Text[0] = '#'
	out[0].Name = "changed"
	ids := e.PolicyIDs()
	ids[0] = "changed"
	if e.Digest() != digest || e.Sources()[0].Name != "a.cedar" || e.Sources()[0].Text[0] != '@' || e.PolicyIDs()[0] != "x" {
		t.Fatal("engine state changed through a caller's slice")
	}
	if got := digestSources(e.Sources()); got != digest {
		t.Fatalf("digest of Sources() = %s, want %s", got, digest)
	}
}
