package procinput

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/execledger/execledger/internal/egress"
	"github.com/execledger/execledger/ledger"
)

// hostHintKeys mark an option or key whose value is a host (Palyra's list).
var hostHintKeys = map[string]bool{
	"host": true, "hostname": true, "server": true, "endpoint": true, "url": true, "uri": true,
	"domain": true, "proxy": true, "address": true, "addr": true,
}

// specialSchemes are the schemes that have a host even without "//"
// ("http:example.com"), as in the WHATWG URL standard Palyra's parser follows.
var specialSchemes = map[string]bool{"http": true, "https": true, "ws": true, "wss": true, "ftp": true}

// checkEgress applies the egress mode and returns Plan.EgressHosts.
func checkEgress(in *Input, p Policy) ([]string, error) {
	if p.EgressMode == EgressNone {
		return nil, nil
	}
	requested, err := requestedHosts(in.RequestedEgressHosts)
	if err != nil {
		return nil, err
	}
	found, err := argumentHosts(in.Args)
	if err != nil {
		return nil, err
	}
	allow, err := p.egressAllowlist()
	if err != nil {
		return nil, err
	}
	all := appendUnique(slices.Clone(requested), found...)
	for _, h := range all {
		if !allow.AllowsHost(h) {
			return nil, egressDenied(ReasonHostNotAllowlisted, fmt.Sprintf("egress host %q is not allowlisted", h))
		}
	}
	if p.EgressMode == EgressPreflight {
		return all, nil
	}
	for _, h := range found {
		if !slices.Contains(requested, h) {
			return nil, egressDenied(ReasonHostNotRequested, fmt.Sprintf(
				"arguments reach %q, which is not in requested_egress_hosts; strict mode lets the process reach only declared hosts", h))
		}
	}
	return requested, nil
}

func requestedHosts(raw []string) ([]string, error) {
	var hosts []string
	for _, r := range raw {
		h, _, err := egress.ParseHostPort(r)
		if err != nil {
			return nil, &Error{Kind: ledger.KindInvalidInput, Reason: ReasonHostInvalid,
				Message: fmt.Sprintf("requested egress host %s is not a host name or IP address", short(r)), Err: err}
		}
		hosts = appendUnique(hosts, h)
	}
	return hosts, nil
}

// argumentHosts extracts hosts from arguments as Palyra does: URLs;
// the value of key=value; the argument after a host-hint option (--host X)
// and the value of a host-hint key (--proxy=X), where a bare name counts;
// host:port. Beyond Palyra: bracketed IPv6, user@host:path (scp, git), and
// a URL that cannot be parsed is refused rather than ignored.
func argumentHosts(args []string) ([]string, error) {
	var hosts []string
	add := func(tok string, hint bool) error {
		h, err := tokenHost(tok, hint)
		if err == nil && h != "" {
			hosts = appendUnique(hosts, h)
		}
		return err
	}
	for i, a := range args {
		if err := add(a, false); err != nil {
			return nil, err
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			if err := add(v, isHostHintKey(k)); err != nil {
				return nil, err
			}
			continue
		}
		if isHostHintKey(a) && i+1 < len(args) {
			if err := add(args[i+1], true); err != nil {
				return nil, err
			}
		}
	}
	return hosts, nil
}

// isHostHintKey splits a key ("--db-host", "proxy_url") at non-alphanumerics
// and looks for a hint word.
func isHostHintKey(k string) bool {
	words := strings.FieldsFunc(strings.ToLower(k), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	return slices.ContainsFunc(words, func(w string) bool { return hostHintKeys[w] })
}

// tokenHost returns the host a token names, "" for none.
func tokenHost(raw string, hint bool) (string, error) {
	tok := strings.Trim(strings.TrimSpace(raw), `"'`)
	if tok == "" {
		return "", nil
	}
	if h, ok, err := urlHost(tok); ok || err != nil {
		return h, err
	}
	if h := scpHost(tok); h != "" {
		return hostOrInvalid(h, raw)
	}
	s := strings.TrimRight(tok, "),;")
	if s == "" || s[0] == '-' || strings.ContainsAny(s, " \t\n\r/\\=") {
		return "", nil
	}
	if hint && looksLikeHost(s) {
		return hostOrInvalid(s, raw)
	}
	if h := hostPortHost(s); h != "" {
		return hostOrInvalid(h, raw)
	}
	return "", nil
}

func hostOrInvalid(h, raw string) (string, error) {
	n, err := egress.ParseHost(h)
	if err != nil {
		return "", &Error{Kind: ledger.KindInvalidInput, Reason: ReasonHostInvalid,
			Message: fmt.Sprintf("argument %s names an invalid host %s", short(raw), short(h)), Err: err}
	}
	return n, nil
}

// urlHost handles "scheme://..." and "http:host" URLs. ok reports a URL.
func urlHost(tok string) (string, bool, error) {
	scheme, rest, found := strings.Cut(tok, ":")
	if !found || !validScheme(scheme) {
		return "", false, nil
	}
	ls := strings.ToLower(scheme)
	switch {
	case strings.HasPrefix(rest, "//"):
	case specialSchemes[ls] && rest != "":
		tok = scheme + "://" + rest
	default:
		return "", false, nil
	}
	if ls == "file" {
		return "", true, nil
	}
	u, err := url.Parse(tok)
	if err != nil || strings.Contains(u.Host, `\`) {
		return "", true, &Error{Kind: ledger.KindInvalidInput, Reason: ReasonURLInvalid,
			Message: fmt.Sprintf("argument %s looks like a URL but cannot be parsed; hosts in it cannot be checked", short(tok)), Err: err}
	}
	if u.Host == "" {
		return "", true, nil
	}
	h, err := hostOrInvalid(strings.Trim(u.Hostname(), "[]"), tok)
	return h, true, err
}

// validScheme is RFC 3986's ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func validScheme(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isASCIILetter(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// scpHost returns HOST from "user@HOST:path".
func scpHost(tok string) string {
	at := strings.IndexByte(tok, '@')
	colon := strings.IndexByte(tok, ':')
	if at <= 0 || colon < at+2 || strings.ContainsAny(tok[:colon], "/ ") {
		return ""
	}
	if h := tok[at+1 : colon]; looksLikeHost(h) {
		return h
	}
	return ""
}

// hostPortHost returns HOST from "HOST:PORT" or "[V6]:PORT".
func hostPortHost(s string) string {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || !allDigits(s[i+1:]) {
		return ""
	}
	h := s[:i]
	if strings.Contains(h, ":") && !(strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")) {
		return ""
	}
	if looksLikeHost(h) {
		return h
	}
	return ""
}

func appendUnique(list []string, hosts ...string) []string {
	for _, h := range hosts {
		if !slices.Contains(list, h) {
			list = append(list, h)
		}
	}
	return list
}
