package manifest

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// path names a value of the manifest: its keys from the top, an array's
// entries by index ("tools", "1", "risk").
type path []string

func (p path) key(k ...string) path { return append(p[:len(p):len(p)], k...) }
func (p path) index(i int) path     { return p.key(strconv.Itoa(i)) }

// id is p as keyLines keys it.
func (p path) id() string { return strings.Join(p, "\x00") }

// String is p dotted, a part that is not a bare TOML key quoted.
func (p path) String() string {
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = k
		if k == "" || strings.IndexFunc(k, func(r rune) bool { return !isBare(r) }) >= 0 {
			parts[i] = strconv.Quote(k)
		}
	}
	return strings.Join(parts, ".")
}

func isBare(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-'
}

// table reads one TOML table of the manifest. Each getter marks its key
// known and reports a value of the wrong type; unknown reports the keys
// no getter asked for. A getter's ok is false when the key is absent or
// its value has the wrong type.
type table struct {
	v     *validator
	at    path
	m     map[string]any
	known map[string]bool
}

// table is raw, which should be a table, read at path at.
func (v *validator) table(at path, raw any) *table {
	t := &table{v: v, at: at, known: map[string]bool{}}
	switch x := raw.(type) {
	case nil:
	case map[string]any:
		t.m = x
	default:
		v.fail(at, "is %s; want a table", typeName(raw))
	}
	return t
}

func (t *table) has(key string) bool { _, ok := t.m[key]; return ok }

func (t *table) str(key string) (string, bool)    { return typed[string](t, key, "a string") }
func (t *table) integer(key string) (int64, bool) { return typed[int64](t, key, "an integer") }

func (t *table) boolean(key string) bool {
	b, _ := typed[bool](t, key, "true or false")
	return b
}

// value is key's value, nil when it is absent.
func (t *table) value(key string) any {
	t.known[key] = true
	return t.m[key]
}

func typed[T any](t *table, key, want string) (T, bool) {
	raw := t.value(key)
	x, ok := raw.(T)
	if !ok && raw != nil {
		t.v.fail(t.at.key(key), "is %s; want %s", typeName(raw), want)
	}
	return x, ok
}

// sub is the table at key, empty when key is absent.
func (t *table) sub(key string) *table { return t.v.table(t.at.key(key), t.value(key)) }

// tables is the array of tables at key, without any entry that is not a
// table; ok is false when key holds something else.
func (t *table) tables(key string) (out []*table, ok bool) {
	at := t.at.key(key)
	switch x := t.value(key).(type) {
	case nil:
	case []map[string]any:
		for i, m := range x {
			out = append(out, t.v.table(at.index(i), m))
		}
	case []any: // an inline array: [{...}, {...}]
		for i, e := range x {
			if _, ok := e.(map[string]any); !ok {
				t.v.fail(at.index(i), "is %s; want a table", typeName(e))
				continue
			}
			out = append(out, t.v.table(at.index(i), e))
		}
	default:
		t.v.fail(at, "is %s; want an array of tables ([[%s]])", typeName(x), at)
		return nil, false
	}
	return out, true
}

// list is the array of strings at key, each entry passed to check
// with its path; the entries check accepts, never nil.
func (t *table) list(key string, check func(at path, s string) bool) []string {
	at := t.at.key(key)
	out := []string{}
	list, ok := t.value(key).([]any)
	if !ok && t.m[key] != nil {
		t.v.fail(at, "is %s; want an array of strings", typeName(t.m[key]))
	}
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			t.v.fail(at.index(i), "is %s; want a string", typeName(e))
		} else if check(at.index(i), s) {
			out = append(out, s)
		}
	}
	return out
}

// unknown reports every key of t that no getter read.
func (t *table) unknown() {
	for _, k := range slices.Sorted(maps.Keys(t.m)) {
		if !t.known[k] {
			t.v.fail(t.at.key(k), "unknown key")
		}
	}
}

// typeName names a decoded TOML value's type for a message.
func typeName(x any) string {
	switch x.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	}
	return "a date or time"
}
