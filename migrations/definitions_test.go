package migrations_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/migrations"
)

// TestDefinitionOrder: each definition comes after those it declares, ties
// by name; unknown names, cycles and malformed declarations are refused
// with an error naming them.
func TestDefinitionOrder(t *testing.T) {
	t.Parallel()
	file := func(deps ...string) *fstest.MapFile {
		var b strings.Builder
		for _, d := range deps {
			b.WriteString("-- depends: " + d + "\n")
		}
		b.WriteString("-- a comment\n\nSELECT 1;\n-- depends: not/read.sql\n")
		return &fstest.MapFile{Data: []byte(b.String())}
	}
	defs, err := migrations.LoadDefs(fstest.MapFS{
		"b/view.sql":   file("a/z.sql", "c/y.sql"),
		"a/z.sql":      file("c/x.sql"),
		"c/y.sql":      file(),
		"c/x.sql":      file(),
		"a/first.sql":  file(),
		"d/README.txt": &fstest.MapFile{Data: []byte("not a definition")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if want := []string{"a/first.sql", "c/x.sql", "a/z.sql", "c/y.sql", "b/view.sql"}; !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}

	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"unknown", fstest.MapFS{"a/x.sql": file("a/nope.sql")}, "a/x.sql depends on a/nope.sql, which is no definition file"},
		{"cycle", fstest.MapFS{"a/x.sql": file("b/y.sql"), "b/y.sql": file("c/z.sql"), "c/z.sql": file("a/x.sql")},
			"cycle: a/x.sql -> b/y.sql -> c/z.sql -> a/x.sql"},
		{"self", fstest.MapFS{"a/x.sql": file("a/x.sql")}, "a/x.sql depends on itself"},
		{"twice", fstest.MapFS{"a/x.sql": file("b/y.sql", "b/y.sql"), "b/y.sql": file()}, "declares b/y.sql twice"},
		{"malformed", fstest.MapFS{"a/x.sql": {Data: []byte("-- depends: b/y.sql c/z.sql\nSELECT 1;\n")}}, "malformed dependency line"},
		{"top level", fstest.MapFS{"x.sql": file()}, "lives in a role folder"},
		{"empty", fstest.MapFS{"a/x.sql": {Data: []byte("\n")}}, "a/x.sql is empty"},
	} {
		if _, err := migrations.LoadDefs(tc.fsys); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestUpgradeFrom17: a database migrated to 17 by the numbered files alone,
// as every database was before the definition files, ends identical to a
// fresh one after Migrate, which applies every definition once.
func TestUpgradeFrom17(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := emptyDatabase(t)
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(migrations.Files()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	st, err := migrations.ReadStatus(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := migrations.Definitions()
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 17 || len(st.Pending) != len(defs) || st.UpToDate() {
		t.Fatalf("status at 17: %+v, want every one of %d definitions pending", st, len(defs))
	}
	r, err := migrations.Run(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != r.Latest || len(r.Applied) != len(defs) {
		t.Fatalf("run: version %d of %d, %d definitions applied, want all %d", r.Version, r.Latest, len(r.Applied), len(defs))
	}
	if st, err := migrations.ReadStatus(ctx, conn); err != nil || !st.UpToDate() {
		t.Fatalf("status after migrate: %+v, %v", st, err)
	}
	upgraded := dumpSchema(t, conn.Config().ConnString())
	fresh := dumpSchema(t, testdb.New(t).URL)
	if !bytes.Equal(upgraded, fresh) {
		t.Fatalf("upgraded from 17 and fresh schemas differ:\n%s", firstDifference(fresh, upgraded))
	}
}

// TestConcurrentMigrate: migrators racing on an empty database serialize;
// both succeed and the definitions are applied once.
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := emptyDatabase(t)
	second, err := pgx.Connect(ctx, first.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	var wg sync.WaitGroup
	results := make([]migrations.Result, 2)
	errs := make([]error, 2)
	for i, c := range []*pgx.Conn{first, second} {
		wg.Go(func() { results[i], errs[i] = migrations.Run(ctx, c) })
	}
	wg.Wait()
	defs, _ := migrations.Definitions()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
	}
	if n := len(results[0].Applied) + len(results[1].Applied); n != len(defs) {
		t.Fatalf("%d + %d definitions applied, want %d in all", len(results[0].Applied), len(results[1].Applied), len(defs))
	}
}

// definitionsWith is the embedded definition files with edits: a nil value
// removes the file.
func definitionsWith(t *testing.T, edits map[string]*string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(migrations.DefinitionFS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.DefinitionFS, p)
		out[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, s := range edits {
		if s == nil {
			delete(out, p)
			continue
		}
		out[p] = &fstest.MapFile{Data: []byte(*s)}
	}
	return out
}

func embedded(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(migrations.DefinitionFS, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr(s string) *string { return &s }

func comment(t *testing.T, db *testdb.DB, fn string) string {
	t.Helper()
	var c *string
	if err := db.Pool.QueryRow(context.Background(), `SELECT obj_description($1::regprocedure, 'pg_proc')`, fn).Scan(&c); err != nil {
		t.Fatal(err)
	}
	if c == nil {
		return ""
	}
	return *c
}

// TestChangedDefinitionIsApplied: only the edited file is pending and
// applied; a file no longer shipped is forgotten; a failing file rolls
// back every definition of the run.
func TestChangedDefinitionIsApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()

	const inRecord = "ledger.in_record(xid8, bigint)"
	edited := embedded(t, "log/in_record.sql") + "\nCOMMENT ON FUNCTION ledger.in_record(xid8, bigint) IS 'edited';\n"
	broken := embedded(t, "log/log_size.sql") + "\nSELECT no_such_function();\n"

	// A failing definition later in the order: nothing of the run stays.
	fsys := definitionsWith(t, map[string]*string{"log/in_record.sql": &edited, "log/log_size.sql": &broken})
	st, err := migrations.ReadStatusWith(ctx, conn.Conn(), migrations.Files(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"log/in_record.sql", "log/log_size.sql"}; !slices.Equal(st.Pending, want) || len(st.Retired) != 0 {
		t.Fatalf("pending %v retired %v, want %v", st.Pending, st.Retired, want)
	}
	if _, err := migrations.RunWith(ctx, conn.Conn(), migrations.Files(), fsys); err == nil || !strings.Contains(err.Error(), "definition log/log_size.sql") {
		t.Fatalf("run with a broken definition: %v", err)
	}
	if c := comment(t, db, inRecord); c == "edited" {
		t.Fatal("a failed run left an earlier definition applied")
	}
	if st, err := migrations.ReadStatusWith(ctx, conn.Conn(), migrations.Files(), fsys); err != nil || len(st.Pending) != 2 {
		t.Fatalf("after a failed run: %+v, %v", st, err)
	}

	// The edit alone, with a file removed.
	fsys = definitionsWith(t, map[string]*string{"log/in_record.sql": &edited, "log/log_publish.sql": nil})
	r, err := migrations.RunWith(ctx, conn.Conn(), migrations.Files(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Applied, []string{"log/in_record.sql"}) {
		t.Fatalf("applied %v, want only the edited file", r.Applied)
	}
	if c := comment(t, db, inRecord); c != "edited" {
		t.Fatalf("comment %q after the run, want the edited one", c)
	}
	st, err = migrations.ReadStatusWith(ctx, conn.Conn(), migrations.Files(), fsys)
	if err != nil || !st.UpToDate() {
		t.Fatalf("status after the run: %+v, %v", st, err)
	}
	// The binary's own files: the edited one is pending again, the
	// removed one too (its record was forgotten).
	st, err = migrations.ReadStatus(ctx, conn.Conn())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"log/in_record.sql", "log/log_publish.sql"}; !slices.Equal(sorted(st.Pending), want) {
		t.Fatalf("pending %v, want %v", st.Pending, want)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestNumberedMigrationReappliesEveryDefinition: after a numbered
// migration runs, every definition is applied again, so one a migration
// dropped (to change its signature, say) comes back.
func TestNumberedMigrationReappliesEveryDefinition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	numbered := fstest.MapFS{}
	names, err := fs.Glob(migrations.Files(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, _ := fs.ReadFile(migrations.Files(), n)
		numbered[n] = &fstest.MapFile{Data: b}
	}
	next := len(names) + 1
	numbered[fmt.Sprintf("%03d_drop.sql", next)] = &fstest.MapFile{Data: []byte(
		"DROP VIEW ledger.requests;\nDROP FUNCTION ledger.log_size();\n")}
	r, err := migrations.RunWith(ctx, conn.Conn(), numbered, migrations.DefinitionFS)
	if err != nil {
		t.Fatal(err)
	}
	defs, _ := migrations.Definitions()
	if int(r.Version) != next || len(r.Applied) != len(defs) {
		t.Fatalf("version %d, %d applied; want %d, all %d", r.Version, len(r.Applied), next, len(defs))
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ledger.requests WHERE ledger.log_size() >= 0`).Scan(&n); err != nil {
		t.Fatalf("the dropped view and function are back: %v", err)
	}
}

var (
	createdFunction = regexp.MustCompile(`(?m)^CREATE OR REPLACE FUNCTION ledger\.(\w+)\(`)
	createdView     = regexp.MustCompile(`(?m)^CREATE OR REPLACE VIEW ledger\.(\w+) `)
	createdPolicy   = regexp.MustCompile(`(?m)^CREATE POLICY (\w+) ON ledger\.(\w+) `)
	createdTrigger  = regexp.MustCompile(`(?m)^CREATE OR REPLACE TRIGGER (\w+) .* ON ledger\.(\w+) `)
)

// TestEveryDefinitionHasOneFile: each function, view, row-security policy
// and trigger of the ledger schema is created by exactly one definition
// file, and each file creates only what the migrated schema holds.
func TestEveryDefinitionHasOneFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	defs, err := migrations.Definitions()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]string{} // object -> files creating it
	for _, d := range defs {
		var objs []string
		for _, m := range createdFunction.FindAllStringSubmatch(d.SQL, -1) {
			objs = append(objs, "function "+m[1])
		}
		for _, m := range createdView.FindAllStringSubmatch(d.SQL, -1) {
			objs = append(objs, "view "+m[1])
		}
		for _, m := range createdPolicy.FindAllStringSubmatch(d.SQL, -1) {
			objs = append(objs, "policy "+m[2]+"."+m[1])
		}
		for _, m := range createdTrigger.FindAllStringSubmatch(d.SQL, -1) {
			objs = append(objs, "trigger "+m[2]+"."+m[1])
		}
		if len(objs) == 0 {
			t.Errorf("%s creates no function, view, policy or trigger", d.Name)
		}
		slices.Sort(objs)
		for _, o := range slices.Compact(objs) {
			files[o] = append(files[o], d.Name)
		}
	}
	rows, err := db.Pool.Query(ctx, `
SELECT DISTINCT 'function ' || proname FROM pg_proc WHERE pronamespace = 'ledger'::regnamespace
UNION ALL SELECT 'view ' || viewname FROM pg_views WHERE schemaname = 'ledger'
UNION ALL SELECT 'policy ' || tablename || '.' || policyname FROM pg_policies WHERE schemaname = 'ledger'
UNION ALL SELECT 'trigger ' || c.relname || '.' || tg.tgname FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid
    WHERE c.relnamespace = 'ledger'::regnamespace AND NOT tg.tgisinternal AND tg.tgparentid = 0`)
	if err != nil {
		t.Fatal(err)
	}
	live, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range live {
		if fs := files[o]; len(fs) != 1 {
			t.Errorf("%s is created by %d definition files %v, want exactly one", o, len(fs), fs)
		}
	}
	for o, fs := range files {
		if !slices.Contains(live, o) {
			t.Errorf("%s (%v) is not in the migrated schema", o, fs)
		}
	}
	if len(live) < 100 {
		t.Fatalf("only %d objects found in the ledger schema", len(live))
	}
}

// codeOnly is SQL without its comments and string literals.
func codeOnly(sql string) string {
	sql = regexp.MustCompile(`(?m)^(COMMENT ON|REVOKE|GRANT) .*$`).ReplaceAllString(sql, "")
	sql = regexp.MustCompile(`--[^\n]*`).ReplaceAllString(sql, "")
	sql = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(sql, "")
	return regexp.MustCompile(`'(?:[^']|'')*'`).ReplaceAllString(sql, "''")
}

// TestDefinitionsDeclareWhatTheyCall: a file whose code names a function
// another file defines declares that file, so a fresh database creates it
// first (a LANGUAGE sql body, a view and a policy are checked when they are
// created).
func TestDefinitionsDeclareWhatTheyCall(t *testing.T) {
	t.Parallel()
	defs, err := migrations.Definitions()
	if err != nil {
		t.Fatal(err)
	}
	definedIn := map[string]string{}
	for _, d := range defs {
		for _, m := range createdFunction.FindAllStringSubmatch(d.SQL, -1) {
			definedIn[m[1]] = d.Name
		}
	}
	call := regexp.MustCompile(`\bledger\.(\w+)\s*\(`)
	for _, d := range defs {
		for _, m := range call.FindAllStringSubmatch(codeOnly(d.SQL), -1) {
			if f, ok := definedIn[m[1]]; ok && f != d.Name && !slices.Contains(d.Depends, f) {
				t.Errorf("%s calls ledger.%s but does not declare `-- depends: %s`", d.Name, m[1], f)
			}
		}
	}
}

// firstDefinitionMigration is the first numbered migration after the
// definition files: from it on, numbered migrations hold only schema.
const firstDefinitionMigration = 19

// TestNumberedMigrationsHoldOnlySchema: no numbered migration from 019 on
// creates or alters a function, view, policy or trigger, or grants on or
// comments a function: that is a definition file's text.
func TestNumberedMigrationsHoldOnlySchema(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(migrations.Files(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	definition := regexp.MustCompile(`(?i)\b(CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE|VIEW|POLICY|TRIGGER|RULE)|ALTER\s+(FUNCTION|PROCEDURE|VIEW|POLICY|TRIGGER)|(GRANT|REVOKE)\b[^;]*\bON\s+(FUNCTION|PROCEDURE)|COMMENT\s+ON\s+(FUNCTION|VIEW|POLICY|TRIGGER))\b`)
	checked := 0
	for _, n := range names {
		var num int
		for _, c := range n[:3] {
			num = num*10 + int(c-'0')
		}
		if num < firstDefinitionMigration {
			continue
		}
		checked++
		b, _ := fs.ReadFile(migrations.Files(), n)
		if m := definition.FindString(codeOnly(string(b))); m != "" {
			t.Errorf("%s: %q belongs in a definition file (docs/migrations.md)", n, m)
		}
	}
	if checked == 0 {
		t.Fatal("no numbered migration checked")
	}
	if m := definition.FindString("CREATE OR REPLACE FUNCTION ledger.x() RETURNS int"); m == "" {
		t.Fatal("the check misses a CREATE FUNCTION")
	}
}

// TestEveryDefinitionFolderIsEmbedded: every .sql file under a folder of
// migrations/ is an embedded definition, so none is silently left out of
// the binary.
func TestEveryDefinitionFolderIsEmbedded(t *testing.T) {
	t.Parallel()
	defs, err := migrations.Definitions()
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, d := range defs {
		embedded = append(embedded, d.Name)
	}
	var onDisk []string
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sql") && strings.Contains(filepath.ToSlash(p), "/") {
			onDisk = append(onDisk, filepath.ToSlash(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(embedded)
	if !slices.Equal(onDisk, embedded) {
		t.Fatalf("on disk %d files, embedded %d: add the folder to definitions' go:embed line in migrations.go", len(onDisk), len(embedded))
	}
	if _, err := os.Stat("api/submit.sql"); err != nil {
		t.Fatal(err)
	}
}
