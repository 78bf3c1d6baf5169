package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/transparency-dev/merkle/rfc6962"
)

// AppendEncoding appends an event's canonical encoding to dst: the bytes
// EventHash hashes (a domain tag, then stream, version, type, payload,
// metadata and recorded_at, each variable-length field prefixed by its
// byte length as a big-endian uint64, recorded_at as big-endian
// microseconds since the Unix epoch). It is the leaf data of the Merkle
// log: every byte the event's hash covers, so a leaf proves the event's
// exact stored bytes.
func AppendEncoding(dst []byte, stream string, version int64, typ string, payload, metadata []byte, recordedAt time.Time) []byte {
	lp := func(b []byte) {
		dst = binary.BigEndian.AppendUint64(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	dst = append(dst, hashDomain...)
	lp([]byte(stream))
	dst = binary.BigEndian.AppendUint64(dst, uint64(version))
	lp([]byte(typ))
	lp(payload)
	lp(metadata)
	return binary.BigEndian.AppendUint64(dst, uint64(recordedAt.UnixMicro()))
}

// Encoding returns e's canonical encoding (AppendEncoding).
func (e Event) Encoding() []byte {
	n := len(hashDomain) + 6*8 + len(e.Stream) + len(e.Type) + len(e.Payload) + len(e.Metadata)
	return AppendEncoding(make([]byte, 0, n), e.Stream, e.Version, e.Type, e.Payload, e.Metadata, e.RecordedAt)
}

// LeafHash is the RFC 6962 leaf hash of an event's canonical encoding,
// SHA-256(0x00 || encoding): the event's leaf in the Merkle log.
func LeafHash(encoding []byte) [32]byte {
	return [32]byte(rfc6962.DefaultHasher.HashLeaf(encoding))
}

// EncodingHash is SHA-256 of an encoding: the event hash (EventHash) of
// the event it encodes.
func EncodingHash(encoding []byte) [32]byte {
	return sha256.Sum256(encoding)
}
