package policy

import (
	"strings"
	"testing"
)

func TestCheckReportsProblemsWithLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       []string // each problem's String, in order
	}{
		{"syntax", "permit (principal, action, resource);\n\npermit (principal == Principal::\"a\" action, resource);\n",
			[]string{`p.cedar:3:43: parser error: parse error "," : exact got action want ,`}},
		{"unknown action", "permit (principal, action == Action::\"tool.exec\", resource);\n",
			[]string{`p.cedar:1:1: policy "p.cedar:0": action Action::"tool.exec" is never evaluated`}},
		{"unknown type", "\n@id(\"x\")\npermit (principal == Principals::\"a\", action, resource is Tools);\n",
			[]string{`p.cedar:2:1: policy "x": principal type Principals does not exist`, `p.cedar:2:1: policy "x": resource type Tools does not exist`}},
		{"duplicate id", "@id(\"x\")\npermit (principal, action, resource);\n@id(\"x\")\nforbid (principal, action, resource);\n",
			[]string{`p.cedar:3:1: duplicate policy id "x" (first at p.cedar:1)`}},
		{"empty id", "@id(\"\")\npermit (principal, action, resource);\n", []string{`p.cedar:1:1: @id must not be empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, problems := Check([]Source{{Name: "p.cedar", Text: []byte(tc.text)}})
			if e != nil || len(problems) != len(tc.want) {
				t.Fatalf("engine %v, problems %v; want %d problems", e != nil, problems, len(tc.want))
			}
			for i, p := range problems {
				loc, _, _ := strings.Cut(tc.want[i], ": ") // p.cedar:L:C
				if got := p.String(); !strings.HasPrefix(got, loc+": ") || !containsWords(got, tc.want[i]) {
					t.Errorf("problem %d = %q, want %q", i, got, tc.want[i])
				}
			}
		})
	}
}

// containsWords reports whether got has every word of want: cedar-go's
// parse messages may change their punctuation, not their position.
func containsWords(got, want string) bool {
	for _, w := range strings.Fields(want) {
		w = strings.Trim(w, `,:"`)
		if w != "" && !strings.Contains(got, w) {
			return false
		}
	}
	return true
}

func TestCheckAcceptsWhatLoadAccepts(t *testing.T) {
	t.Parallel()
	var sources []Source
	for _, p := range testdataPaths() {
		e, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, e.Sources()...)
	}
	e, problems := Check(sources)
	if len(problems) > 0 {
		t.Fatalf("the example policies: %v", problems)
	}
	if want := loadTestdata(t).Digest(); e.Digest() != want {
		t.Errorf("digest %s, Load's %s", e.Digest(), want)
	}
}
