// Package artifact reads and writes a skill's artifact: a ZIP archive
// holding the manifest (skill.toml, which this package does not parse),
// the modules (modules/*.wasm, at least one), optional assets (assets/...,
// up to MaxDepth levels deep), and four files Pack generates: a
// CycloneDX 1.5 SBOM (sbom.cdx.json), an in-toto provenance statement
// (provenance.json), an integrity list (integrity.json: every other
// payload file's SHA-256 and size) and the publisher's signature
// (signature.json).
//
// The payload is every file but signature.json. Its digest is SHA-256
// over the domain tag "execledger.skill.payload.v1" and then, for each
// file in byte order of its path, the path and the content, each preceded
// by its length as a big-endian uint64: no two payloads share an encoding.
// The signature is Ed25519 over "execledger.skill.signature.v1\x00" and
// the 32 digest bytes, so no other signature made with a publisher's key
// can pass for a skill's. The payload digest does not depend on the ZIP's
// bytes; the artifact digest (SHA-256 of the whole archive) names the
// exact file installed.
//
// An artifact has one encoding (see encode): entries in path order, each
// stored uncompressed, with fixed times, modes and versions, no extra
// fields, comments or directory entries; the generated files exactly as
// Pack writes them. Pack writes it; Open accepts nothing else, so a byte
// changed anywhere — in a file, a local header the central directory does
// not repeat, a timestamp, signature.json (outside the signed payload) —
// is refused, and an artifact digest stands for one signed payload.
// Stored, not deflated: every byte then follows from the files alone, so
// an artifact opens under any build, where compressed bytes would be one
// Go release's compress/flate output.
//
// Open is the reader for untrusted archives: it counts the central
// directory before archive/zip reads it, checks every header (path, file
// type, encryption, method, declared sizes and ratio) before decompressing
// anything, decompresses through readers limited to the declared sizes,
// then checks the layout, the integrity list, the SBOM and provenance, and
// the form of signature.json. It does not decide trust: it returns the
// key the artifact claims, and Verify checks the signature under a key
// the caller trusts.
package artifact
