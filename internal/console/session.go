package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// session is one signed-in person: their login, the pool authenticated as
// it, and the token every form they post must carry.
type session struct {
	login     string
	principal string        // ledger.current_principal(); "" when the login maps to none
	roles     []string      // the ledger_* roles the login is a member of
	pool      *pgxpool.Pool // the primary: actions, and reads without a replica
	// read is the pool the pages read from: the replica's
	// (Options.ReplicaURL), authenticated as the same login, else pool.
	read    *pgxpool.Pool
	csrf    string
	created time.Time

	mu       sync.Mutex
	lastSeen time.Time
}

func (s *session) has(role string) bool {
	for _, r := range s.roles {
		if r == role {
			return true
		}
	}
	return false
}

// close closes the session's pools.
func (s *session) close() {
	if s.read != nil && s.read != s.pool {
		s.read.Close()
	}
	s.pool.Close()
}

// callsAwaiting says whether the login may call ledger.awaiting_approval,
// which shows what waits with its input.
func (s *session) callsAwaiting() bool {
	return s.has("ledger_approver") || s.has("ledger_auditor") || s.has("ledger_admin")
}

// readsLog says whether the login may read ledger.events (the roles that
// hold SELECT on it).
func (s *session) readsLog() bool {
	return s.has("ledger_auditor") || s.has("ledger_admin") || s.has("ledger_executor")
}

// readsQueue says whether the login may read ledger.queue.
func (s *session) readsQueue() bool {
	return s.has("ledger_auditor") || s.has("ledger_admin") || s.has("ledger_executor")
}

// sessionStore keeps the sessions by the SHA-256 of their cookie value, so
// that the map holds nothing a reader of memory could replay directly.
type sessionStore struct {
	idle time.Duration
	max  int
	now  func() time.Time

	mu sync.Mutex
	m  map[string]*session
}

var errTooManySessions = errors.New("console: too many sessions are open; try again later")

// maxSessionsPerLogin bounds one login's sessions: signing in again past
// it ends that login's oldest session, so one person cannot fill the
// store (and the database's connections) by signing in over and over.
const maxSessionsPerLogin = 5

func newSessionStore(idle time.Duration, max int, now func() time.Time) *sessionStore {
	return &sessionStore{idle: idle, max: max, now: now, m: map[string]*session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("console: crypto/rand: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func storeKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// add stores s and returns the cookie value that names it.
func (st *sessionStore) add(s *session) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var oldestKey string
	var oldest *session
	n := 0
	for k, o := range st.m {
		if o.login != s.login {
			continue
		}
		if n++; oldest == nil || o.created.Before(oldest.created) {
			oldestKey, oldest = k, o
		}
	}
	if n >= maxSessionsPerLogin {
		delete(st.m, oldestKey)
		go oldest.close()
	}
	if len(st.m) >= st.max {
		return "", errTooManySessions
	}
	token := randomToken()
	s.csrf = randomToken()
	s.created = st.now()
	s.lastSeen = s.created
	st.m[storeKey(token)] = s
	return token, nil
}

// get returns the live session the cookie value names and marks it seen;
// an idle one is ended and not returned.
func (st *sessionStore) get(token string) *session { return st.lookup(token, true) }

// peek is get without marking the session seen: a page's live updates,
// which poll on their own, do not keep an idle session open.
func (st *sessionStore) peek(token string) *session { return st.lookup(token, false) }

func (st *sessionStore) lookup(token string, touch bool) *session {
	if token == "" {
		return nil
	}
	key := storeKey(token)
	st.mu.Lock()
	s := st.m[key]
	if s == nil {
		st.mu.Unlock()
		return nil
	}
	now := st.now()
	s.mu.Lock()
	expired := now.Sub(s.lastSeen) > st.idle
	if !expired && touch {
		s.lastSeen = now
	}
	s.mu.Unlock()
	if expired {
		delete(st.m, key)
	}
	st.mu.Unlock()
	if expired {
		s.close()
		return nil
	}
	return s
}

// remove ends the session the cookie value names, closing its pool.
func (st *sessionStore) remove(token string) {
	key := storeKey(token)
	st.mu.Lock()
	s := st.m[key]
	delete(st.m, key)
	st.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// sweep ends every idle session and returns how many it ended.
func (st *sessionStore) sweep() int {
	now := st.now()
	var ended []*session
	st.mu.Lock()
	for k, s := range st.m {
		s.mu.Lock()
		idle := now.Sub(s.lastSeen) > st.idle
		s.mu.Unlock()
		if idle {
			ended = append(ended, s)
			delete(st.m, k)
		}
	}
	st.mu.Unlock()
	for _, s := range ended {
		s.close()
	}
	return len(ended)
}

// closeAll ends every session (at shutdown).
func (st *sessionStore) closeAll() {
	st.mu.Lock()
	all := st.m
	st.m = map[string]*session{}
	st.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}

func (st *sessionStore) len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.m)
}

// sweepEvery sweeps until ctx ends.
func (st *sessionStore) sweepEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			st.sweep()
		}
	}
}
