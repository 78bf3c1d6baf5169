package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/execledger/execledger/internal/contract"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

// The resources' URI templates.
const (
	attestationTemplate = "execledger://requests/{id}/attestation"
	bundleTemplate      = "execledger://runs/{run}/bundle"
)

func attestationURI(id uuid.UUID) string {
	return "execledger://requests/" + id.String() + "/attestation"
}

// addResources registers the attestation and bundle resources.
func (ss *session) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "attestation", URITemplate: attestationTemplate, MIMEType: "application/json",
		Description: "The DSSE attestation envelope of one of your requests; check it with execledger verify FILE --attest-key KEY."},
		ss.readAttestation)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "bundle", URITemplate: bundleTemplate, MIMEType: "application/x-ndjson",
		Description: "An export bundle of your requests of one run (this session's is " + ss.run + "), proved against the newest clean " +
			"published checkpoint; check it offline with execledger verify FILE --log-key K --attest-key K."},
		ss.readBundle)
}

// readAttestation returns a request's attestation envelope. The
// principal's own login decides whether the request is one it may see
// (ledger.requests); only then does the reader fetch the envelope.
func (ss *session) readAttestation(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, "execledger://requests/")
	idText, ok2 := strings.CutSuffix(rest, "/attestation")
	id, err := uuid.Parse(idText)
	if !ok || !ok2 || err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	r, err := ss.p.client.Get(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	if r.AttestationDigest == nil {
		return nil, fmt.Errorf("request %s is %s and has no attestation yet", id, r.State)
	}
	var envelope string
	err = ss.s.opts.Reader.QueryRow(ctx, queryAttestation, contract.RequestStream(id.String())).Scan(&envelope)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("request %s: its attestation event is not readable yet", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read the attestation of %s: %w", id, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: envelope}}}, nil
}

// readBundle exports the principal's requests of a run. The scope is the
// session's principal, whatever the URI says, so a client can read only
// its own principal's runs.
func (ss *session) readBundle(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, "execledger://runs/")
	run, ok2 := strings.CutSuffix(rest, "/bundle")
	if !ok || !ok2 || run == "" || strings.Contains(run, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	// The principal as the database sees the login now, not as it was
	// when the session began: a mapping changed since must not open the
	// old principal's runs.
	var login string
	var principal *string
	if err := ss.p.pool.QueryRow(ctx, queryWhoAmI).Scan(&login, &principal); err != nil {
		return nil, fmt.Errorf("bundle of run %s: %w", run, err)
	}
	if principal == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var buf bytes.Buffer
	w := bundle.NewWriter(&capped{w: &buf, left: MaxBundleBytes})
	opts := export.Options{Scope: bundle.Scope{Principal: *principal, Run: run}, Wait: ss.s.opts.BundleWait}
	sum, err := export.Export(ctx, ss.s.opts.Reader, opts, w)
	if errors.Is(err, errBundleTooLarge) {
		return nil, fmt.Errorf("bundle of run %s: over %d MiB; use execledger export --principal %s with a time range", run, MaxBundleBytes>>20, ss.p.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("bundle of run %s: %w", run, err)
	}
	if sum.Selected == 0 {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/x-ndjson", Text: buf.String()}}}, nil
}

// MaxBundleBytes bounds a bundle served as a resource: it is held in
// memory, and a run may be long.
const MaxBundleBytes = 64 << 20

var errBundleTooLarge = errors.New("bundle too large")

// capped is a writer that refuses to go past left bytes.
type capped struct {
	w    *bytes.Buffer
	left int
}

func (c *capped) Write(p []byte) (int, error) {
	if len(p) > c.left {
		return 0, errBundleTooLarge
	}
	c.left -= len(p)
	return c.w.Write(p)
}
