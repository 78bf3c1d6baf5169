package contract_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/internal/testdb"
)

// root is the repository's root, from this package's directory.
const root = "../.."

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	// eventLiteral is a quoted name of the event grammar; function names
	// (ledger.submit, pg_catalog.x) share it and are told apart by prefix.
	eventLiteral = regexp.MustCompile(`'([a-z][a-z_]*\.[a-z][a-z_]*)'`)
	sqlLiteral   = regexp.MustCompile(`'([a-z_]+)'`)
)

// notEventPrefixes are the prefixes of quoted names in SQL that are
// functions, schemas' objects or configuration, not event types.
var notEventPrefixes = []string{"ledger.", "execledger.", "pg_catalog.", "ledger_rebuild.", "public."}

// definitionFiles returns every SQL definition file (migrations/<area>/),
// with its comments removed.
func definitionFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "migrations", "*", "*.sql"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no definition files under migrations/*/ (%v)", err)
	}
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = sqlComment.ReplaceAllString(string(b), "")
	}
	return files
}

func eventTypesIn(s string) []string {
	var ts []string
	for _, m := range eventLiteral.FindAllStringSubmatch(s, -1) {
		if !slices.ContainsFunc(notEventPrefixes, func(p string) bool { return strings.HasPrefix(m[1], p) }) {
			ts = append(ts, m[1])
		}
	}
	return ts
}

// TestSQLNamesOnlyContractEvents: every event type a definition names (in
// an IN-list, a CASE, a write) is one of the contract's.
func TestSQLNamesOnlyContractEvents(t *testing.T) {
	t.Parallel()
	for path, text := range definitionFiles(t) {
		for _, typ := range eventTypesIn(text) {
			if _, ok := contract.EventType(typ); !ok {
				t.Errorf("%s names event type %q, which is not in internal/contract", path, typ)
			}
		}
	}
}

// sqlWrites returns the event types each definition file writes: those
// named in a statement that inserts into ledger.events or appends through
// a writing helper.
func sqlWrites(t *testing.T) map[string][]string {
	writes := map[string][]string{}
	for path, text := range definitionFiles(t) {
		for _, stmt := range strings.Split(text, ";") {
			if !strings.Contains(stmt, "INSERT INTO ledger.events") && !strings.Contains(stmt, "ledger.skill_append(") &&
				!strings.Contains(stmt, "ledger.skill_set(") && !strings.Contains(stmt, "ledger.projection_event(") {
				continue
			}
			for _, typ := range eventTypesIn(stmt) {
				if !slices.Contains(writes[path], typ) {
					writes[path] = append(writes[path], typ)
				}
			}
		}
	}
	return writes
}

// goWrites returns the event types each Go source file (tests aside)
// writes: a composite literal's Type: "x.y" field.
func goWrites(t *testing.T) map[string][]string {
	writes := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "contract" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if id, ok := kv.Key.(*ast.Ident); !ok || id.Name != "Type" {
				return true
			}
			lit, ok := kv.Value.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			typ, _ := strconv.Unquote(lit.Value)
			if _, ok := contract.EventType(typ); ok && !slices.Contains(writes[rel], typ) {
				writes[rel] = append(writes[rel], typ)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return writes
}

// TestOneWriterPerEvent: each event type is written where the contract
// says, and only there; a type with two writers has one payload shape
// (no optional members), which the end-of-test check of every test
// database (testdb.CheckEvents) holds both writers to.
func TestOneWriterPerEvent(t *testing.T) {
	t.Parallel()
	written := map[string][]string{} // type -> files
	for _, m := range []map[string][]string{sqlWrites(t), goWrites(t)} {
		for file, types := range m {
			for _, typ := range types {
				written[typ] = append(written[typ], file)
			}
		}
	}
	for _, e := range contract.Events {
		for _, f := range written[e.Type] {
			if !slices.Contains(e.Writers, f) {
				t.Errorf("%s writes %s, whose writers in internal/contract are %v", f, e.Type, e.Writers)
			}
		}
		for _, w := range e.Writers {
			b, err := os.ReadFile(filepath.Join(root, w))
			if err != nil {
				t.Errorf("%s: writer %s: %v", e.Type, w, err)
				continue
			}
			if !strings.Contains(string(b), e.Type) {
				t.Errorf("%s: writer %s does not name it", e.Type, w)
			}
		}
		if len(e.Writers) > 1 && len(e.Optional) > 0 {
			t.Errorf("%s has %d writers and optional members %v: two writers write one shape", e.Type, len(e.Writers), e.Optional)
		}
		if len(e.Writers) == 0 && len(e.Required) > 0 {
			t.Errorf("%s has no writer but required members: a type no longer written has only Legacy members", e.Type)
		}
	}
	for typ, files := range written {
		if _, ok := contract.EventType(typ); !ok {
			t.Errorf("%v write %s, which is not in internal/contract", files, typ)
		}
	}
}

// TestExecutorRecordAcceptsTheRequestEvents: the types
// ledger.executor_record lets an executor write are the contract's
// Request events.
func TestExecutorRecordAcceptsTheRequestEvents(t *testing.T) {
	t.Parallel()
	text := definitionFiles(t)["migrations/executor/executor_record.sql"]
	i := strings.Index(text, "a.type NOT IN (")
	if i < 0 {
		t.Fatal("executor_record.sql: no `a.type NOT IN (` list of the types it accepts")
	}
	list := text[i : i+strings.Index(text[i:], ")")]
	got := eventTypesIn(list)
	want := contract.TypesWhere(func(e contract.Event) bool { return e.Request })
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("executor_record accepts %v; the contract's Request events are %v", got, want)
	}
}

// TestCheckConstraintsAgree: the CHECK constraints of the request tables
// allow exactly the contract's states and error kinds.
func TestCheckConstraintsAgree(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	nonFinal := slices.DeleteFunc(slices.Clone(contract.States), contract.Final)
	for name, want := range map[string][]string{
		"request_status_state_check":      contract.States,
		"request_status_error_kind_check": contract.ErrorKinds,
		"request_status_final_check":      contract.FinalStates,
		"queue_state_check":               nonFinal,
	} {
		var def string
		err := db.Pool.QueryRow(context.Background(),
			`SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
			 WHERE n.nspname = 'ledger' AND c.conname = $1`, name).Scan(&def)
		if err != nil {
			t.Errorf("constraint ledger.%s: %v", name, err)
			continue
		}
		var got []string
		for _, m := range sqlLiteral.FindAllStringSubmatch(def, -1) {
			got = append(got, m[1])
		}
		if !sameSet(got, want) {
			t.Errorf("ledger.%s allows %v; the contract says %v", name, got, want)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// TestSQLRaisesContractErrors: every condition a definition raises is in
// the contract's API error table.
func TestSQLRaisesContractErrors(t *testing.T) {
	t.Parallel()
	errcode := regexp.MustCompile(`ERRCODE\s*=\s*'([A-Za-z0-9_]+)'`)
	n := 0
	for path, text := range definitionFiles(t) {
		for _, m := range errcode.FindAllStringSubmatch(text, -1) {
			n++
			if _, ok := contract.APIErrorCode(m[1]); !ok {
				t.Errorf("%s raises %s, which is not in contract.APIErrors", path, m[1])
			}
		}
	}
	if n == 0 {
		t.Fatal("no ERRCODE found in the definitions: the scan is broken")
	}
}
