package console

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func TestNeutralizeCSVFormulas(t *testing.T) {
	for in, want := range map[string]string{"=1+2": "'=1+2", "+x": "'+x", "-x": "'-x", "@sum": "'@sum", "plain": "plain", "": ""} {
		if got := neutralize(in); got != want {
			t.Errorf("neutralize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLimiterWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimiter(2, time.Minute, func() time.Time { return now })
	if !l.allow("a", "x") || !l.allow("a", "y") {
		t.Fatal("first two attempts refused")
	}
	if l.allow("a", "z") {
		t.Fatal("third attempt from one address admitted")
	}
	if !l.allow("b", "w") {
		t.Fatal("another address and login refused")
	}
	now = now.Add(61 * time.Second)
	if !l.allow("a", "x") {
		t.Fatal("refused after the window passed")
	}
}

func TestCursorRoundTrip(t *testing.T) {
	if _, err := parseCursor("nonsense"); err == nil {
		t.Fatal("a bad cursor parsed")
	}
	c, err := parseCursor("2026-11-29T03:07:50.248123Z_01a22545-4f1a-7092-8131-f986fe7c65c3")
	if err != nil || c.String() != "2026-11-29T03:07:50.248123Z_01a22545-4f1a-7092-8131-f986fe7c65c3" {
		t.Fatalf("%v %v", c, err)
	}
}

func TestSessionsPerLoginBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	st := newSessionStore(time.Hour, 100, func() time.Time { return now })
	var tokens []string
	for i := 0; i < maxSessionsPerLogin+2; i++ {
		pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		tok, err := st.add(&session{login: "alice", pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	if n := st.len(); n != maxSessionsPerLogin {
		t.Fatalf("%d sessions of one login, want %d", n, maxSessionsPerLogin)
	}
	if st.get(tokens[0]) != nil || st.get(tokens[1]) != nil {
		t.Fatal("the oldest sessions were kept")
	}
	if st.get(tokens[len(tokens)-1]) == nil {
		t.Fatal("the newest session was dropped")
	}
}
