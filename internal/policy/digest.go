package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// digestDomain separates policy-set digests from every other SHA-256 in
// Execledger.
const digestDomain = "execledger.policyset.v1"

// digestSources computes
//
//	"sha256:" + hex(SHA-256(domain ‖ for each source: LP(name) ‖ LP(text)))
//
// where LP(x) is the 8-byte big-endian length of x followed by x.
func digestSources(sources []Source) string {
	h := sha256.New()
	h.Write([]byte(digestDomain))
	for _, s := range sources {
		writeLP(h, []byte(s.Name))
		writeLP(h, s.Text)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func writeLP(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
