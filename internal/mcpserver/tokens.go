package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/execledger/execledger/ledger"
)

// A token is "elmcp_" + a 12-hex-digit id + "_" + 256 random bits in
// base64url. The id names it (list, revoke) and is not secret; the
// database stores only the SHA-256 of the whole token.
const tokenPrefix = "elmcp_"

var tokenIDRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

// TokenInfo is one row of ledger.mcp_tokens.
type TokenInfo struct {
	ID        string     `json:"id"`
	Login     string     `json:"login"`
	Note      string     `json:"note,omitempty"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// tokenHash is the SHA-256 the database keeps of token.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateToken makes a token that acts as login and returns it; it is
// shown once and never stored. The database refuses a login that is not
// a mapped, unprivileged login role (migration 018); db must be a
// ledger_admin login.
func CreateToken(ctx context.Context, db ledger.DBTX, login, note string) (token, id string, err error) {
	var idb [6]byte
	var secret [32]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return "", "", err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", "", err
	}
	id = hex.EncodeToString(idb[:])
	token = tokenPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	if _, err := db.Exec(ctx, queryTokenCreate, id, tokenHash(token), login, note); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "22023" {
			return "", "", fmt.Errorf("mcp token create: %w: %s", ledger.ErrInvalidInput, pgErr.Message)
		}
		return "", "", fmt.Errorf("mcp token create: %w", err)
	}
	return token, id, nil
}

// ErrNoToken: no live token has that id.
var ErrNoToken = errors.New("no such live token")

// RevokeToken revokes the token with id; ErrNoToken when none is live.
func RevokeToken(ctx context.Context, db ledger.DBTX, id string) error {
	if !tokenIDRE.MatchString(id) {
		return fmt.Errorf("mcp token revoke: %q is not a token id (12 hex digits)", id)
	}
	var ok bool
	if err := db.QueryRow(ctx, queryTokenRevoke, id).Scan(&ok); err != nil {
		return fmt.Errorf("mcp token revoke: %w", err)
	}
	if !ok {
		return fmt.Errorf("mcp token revoke %s: %w", id, ErrNoToken)
	}
	return nil
}

// ListTokens lists every token, revoked ones included.
func ListTokens(ctx context.Context, db ledger.DBTX) ([]TokenInfo, error) {
	rows, err := db.Query(ctx, queryTokenList)
	if err != nil {
		return nil, fmt.Errorf("mcp token list: %w", err)
	}
	defer rows.Close()
	var out []TokenInfo
	for rows.Next() {
		var t TokenInfo
		if err := rows.Scan(&t.ID, &t.Login, &t.Note, &t.CreatedBy, &t.CreatedAt, &t.RevokedAt); err != nil {
			return nil, fmt.Errorf("mcp token list: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// tokenLogin is the login a presented token acts as, "" for a token that
// is malformed, unknown, revoked or whose login may no longer use one.
func tokenLogin(ctx context.Context, db ledger.DBTX, token string) (string, error) {
	if !strings.HasPrefix(token, tokenPrefix) || len(token) > 128 {
		return "", nil
	}
	var login *string
	if err := db.QueryRow(ctx, queryTokenLogin, tokenHash(token)).Scan(&login); err != nil {
		return "", fmt.Errorf("mcp token lookup: %w", err)
	}
	if login == nil {
		return "", nil
	}
	return *login, nil
}
