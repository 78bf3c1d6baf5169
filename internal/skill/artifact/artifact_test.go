package artifact

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/execledger/execledger/internal/attest"
)

// testKey is a fixed key, so that packing testdata/skill gives the same
// bytes every time (testdata/golden.skill).
func testKey(seed string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte("execledger artifact test key " + seed))
	return ed25519.NewKeyFromSeed(s[:])
}

func publicKey(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

var testInfo = Info{SkillID: "acme.hello", Version: "1.0.0", Publisher: "acme", Builder: "execledger skill package"}

// packed is testdata/skill packed with testKey("publisher"), once.
var packed = sync.OnceValues(func() ([]byte, error) { return Pack("testdata/skill", testKey("publisher"), testInfo) })

func packedSkill(t testing.TB) []byte {
	t.Helper()
	data, err := packed()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// packedFiles is the packed skill's files, a fresh copy.
func packedFiles(t testing.TB) map[string][]byte {
	t.Helper()
	a, err := Open(packedSkill(t))
	if err != nil {
		t.Fatal(err)
	}
	return maps.Clone(a.Files)
}

// openVerify is Open then Verify under key's public key.
func openVerify(data []byte, key ed25519.PrivateKey) error {
	a, err := Open(data)
	if err != nil {
		return err
	}
	return a.Verify(publicKey(key))
}

func TestOpenRoundTrip(t *testing.T) {
	t.Parallel()
	data := packedSkill(t)
	a, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Verify(publicKey(testKey("publisher"))); err != nil {
		t.Fatal(err)
	}
	want := []string{"assets/a/b/c/deep.txt", "assets/readme.txt", "integrity.json", "modules/hello.wasm", "provenance.json",
		"sbom.cdx.json", "skill.toml"}
	if !slices.Equal(a.Paths, want) || len(a.Files) != len(want)+1 || a.Files[FileSignature] == nil {
		t.Errorf("paths %v, %d files", a.Paths, len(a.Files))
	}
	manifest, _ := os.ReadFile("testdata/skill/skill.toml")
	if !slices.Equal(a.Modules(), []string{"modules/hello.wasm"}) || !bytes.Equal(a.Manifest(), manifest) {
		t.Errorf("modules %v, manifest %q", a.Modules(), a.Manifest())
	}
	sum := sha256.Sum256(data)
	if a.Digest != fmt.Sprintf("sha256:%x", sum) || a.PayloadDigest != PayloadDigest(a.Files) {
		t.Errorf("digest %s, payload digest %x", a.Digest, a.PayloadDigest)
	}
	pub := publicKey(testKey("publisher"))
	if s := a.Signature; s.Publisher != "acme" || !s.PublicKey.Equal(pub) || !VerifySignature(pub, a.PayloadDigest, s.Sig) ||
		!strings.HasPrefix(s.KeyID, "ed25519:") {
		t.Errorf("signature %+v", s)
	}
}

// TestPayloadDigest pins the encoding the digest is over.
func TestPayloadDigest(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{"b": []byte("2"), "a": []byte("1"), FileSignature: []byte("not in the payload")}
	var enc []byte
	enc = append(enc, "execledger.skill.payload.v1"...)
	for _, f := range [][2]string{{"a", "1"}, {"b", "2"}} {
		enc = binary.BigEndian.AppendUint64(enc, uint64(len(f[0])))
		enc = append(enc, f[0]...)
		enc = binary.BigEndian.AppendUint64(enc, uint64(len(f[1])))
		enc = append(enc, f[1]...)
	}
	if got, want := PayloadDigest(files), sha256.Sum256(enc); got != want {
		t.Fatalf("PayloadDigest %x, want %x", got, want)
	}
	// The lengths keep the boundary between path and content.
	if PayloadDigest(map[string][]byte{"ab": []byte("c")}) == PayloadDigest(map[string][]byte{"a": []byte("bc")}) {
		t.Error("two payloads with one digest")
	}
	if s := PayloadDigestString([32]byte{1}); s != "sha256:01"+strings.Repeat("0", 62) {
		t.Errorf("PayloadDigestString %s", s)
	}
}

// TestSignatureDomain: a skill signature is over its tag and the digest;
// the same key's signature over the bare digest does not pass for one.
func TestSignatureDomain(t *testing.T) {
	t.Parallel()
	key, d := testKey("publisher"), sha256.Sum256([]byte("payload"))
	if sig := Sign(key, d); !VerifySignature(publicKey(key), d, sig) ||
		!ed25519.Verify(publicKey(key), append([]byte("execledger.skill.signature.v1\x00"), d[:]...), sig) {
		t.Fatal("a skill signature is not over the tag and the digest")
	}
	if VerifySignature(publicKey(key), d, ed25519.Sign(key, d[:])) {
		t.Error("a signature over the bare digest passes for a skill signature")
	}
	if VerifySignature(publicKey(key)[:31], d, Sign(key, d)) {
		t.Error("a short public key verifies")
	}
}

// flipped is b with one bit of byte i flipped, a different bit from
// byte to byte.
func flipped(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1 << (i % 8)
	return c
}

// TestEveryByteOfTheArchive changes each byte of an artifact in turn
// (every stride-th under the race detector, which adds nothing to this
// test but time): each change makes Open or Verify fail.
func TestEveryByteOfTheArchive(t *testing.T) {
	t.Parallel()
	data, key := packedSkill(t), testKey("publisher")
	for i := 0; i < len(data); i += stride {
		if err := openVerify(flipped(data, i), key); err == nil {
			t.Fatalf("byte %d of %d ^ %#x: accepted", i, len(data), 1<<(i%8))
		}
	}
}

// TestEveryByteOfEveryFile changes each byte (or every stride-th) of each file and encodes
// the files canonically again, so that only the checks of the contents
// can notice: they do, signature.json (outside the payload) included.
func TestEveryByteOfEveryFile(t *testing.T) {
	t.Parallel()
	files, key := packedFiles(t), testKey("publisher")
	for p, b := range files {
		for i := 0; i < len(b); i += stride {
			changed := maps.Clone(files)
			changed[p] = flipped(b, i)
			data, err := encode(changed)
			if err != nil {
				t.Fatal(err)
			}
			if err := openVerify(data, key); err == nil {
				t.Fatalf("%s: byte %d ^ %#x: accepted", p, i, 1<<(i%8))
			}
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	a, err := Open(packedSkill(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Verify(publicKey(testKey("someone else"))); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "not the trusted key") {
		t.Errorf("another key: %v", err)
	}
	// The key named, but a signature by it over another payload.
	forged := *a
	forged.Signature.Sig = Sign(testKey("publisher"), sha256.Sum256([]byte("another payload")))
	if err := forged.Verify(publicKey(testKey("publisher"))); !errors.Is(err, ErrSignature) {
		t.Errorf("a signature over another payload: %v", err)
	}
}

// TestSignatureOfAnotherPayload puts into an artifact a signature.json
// that names this payload and carries the same key's signature of
// another: Open accepts its form, Verify refuses it. And the other
// artifact's whole signature.json is refused by Open.
func TestSignatureOfAnotherPayload(t *testing.T) {
	t.Parallel()
	key := testKey("publisher")
	files := packedFiles(t)
	other := maps.Clone(files)
	other["assets/readme.txt"] = []byte("Hello, other assets.\n")
	d, otherDigest := PayloadDigest(files), PayloadDigest(other)

	s, err := parseSignature(files[FileSignature], d)
	if err != nil {
		t.Fatal(err)
	}
	s.Sig = Sign(key, otherDigest)
	files[FileSignature], err = signatureJSON(s, d)
	if err != nil {
		t.Fatal(err)
	}
	data, err := encode(files)
	if err != nil {
		t.Fatal(err)
	}
	if err := openVerify(data, key); !errors.Is(err, ErrSignature) {
		t.Errorf("the signature of another payload: %v", err)
	}

	files[FileSignature], err = signatureJSON(s, otherDigest)
	if err != nil {
		t.Fatal(err)
	}
	if data, err = encode(files); err != nil {
		t.Fatal(err)
	}
	if err := openVerify(data, key); !errors.Is(err, ErrSignatureFormat) || !strings.Contains(err.Error(), "names payload") {
		t.Errorf("another payload's signature.json: %v", err)
	}
}

// entry is one entry of a handcrafted archive: deflated by archive/zip
// unless edit changes the method; written raw (edit sets the sizes and
// CRC) when raw is set or the method is neither store nor deflate.
type entry struct {
	name string
	body []byte
	edit func(*zip.FileHeader)
	raw  bool
}

func zipOf(entries []entry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		h.SetMode(0o644)
		if e.edit != nil {
			e.edit(h)
		}
		create := zw.CreateHeader
		if e.raw || (h.Method != zip.Store && h.Method != zip.Deflate) {
			create = zw.CreateRaw
		}
		w, err := create(h)
		must(err)
		_, err = w.Write(e.body)
		must(err)
	}
	must(zw.Close())
	return buf.Bytes()
}

// must panics on an error that only a bug in the test can cause.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// entriesOf is files as entries, in path order.
func entriesOf(files map[string][]byte) []entry {
	var out []entry
	for _, p := range slices.Sorted(maps.Keys(files)) {
		out = append(out, entry{name: p, body: files[p]})
	}
	return out
}

// deflated is body deflated, for raw entries.
func deflated(body []byte) []byte {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, err := fw.Write(body)
	must(err)
	must(fw.Close())
	return buf.Bytes()
}

// rawDeflate is a raw entry of comp, body deflated, whose header
// declares size bytes (and body's CRC).
func rawDeflate(name string, body, comp []byte, size uint64) entry {
	return entry{name: name, body: comp, raw: true, edit: func(h *zip.FileHeader) {
		h.CRC32, h.CompressedSize64, h.UncompressedSize64 = crc32.ChecksumIEEE(body), uint64(len(comp)), size
	}}
}

type hostileCase struct {
	name string
	data []byte
	want error
	msg  string // in the error, where want alone does not tell the check that refused
}

// base is the packed skill's files and entries, to handcraft archives from.
type base struct {
	files map[string][]byte
	good  []entry
}

func newBase() base {
	data, err := packed()
	must(err)
	a, err := Open(data)
	must(err)
	return base{files: a.Files, good: entriesOf(a.Files)}
}

// with is the artifact's entries and extra, zipped.
func (b base) with(extra ...entry) []byte { return zipOf(append(slices.Clone(b.good), extra...)) }

// without is the artifact's entries but name, zipped.
func (b base) without(name string) []byte {
	return zipOf(slices.DeleteFunc(slices.Clone(b.good), func(e entry) bool { return e.name == name }))
}

// changed is the artifact's files, name's content replaced, zipped.
func (b base) changed(name string, body []byte) []byte {
	c := maps.Clone(b.files)
	c[name] = body
	return zipOf(entriesOf(c))
}

// hostile is every handcrafted archive Open must refuse, and why.
func hostile() []hostileCase { return append(slices.Clone(smallHostile()), largeHostile()...) }

// largeHostile are the hostile archives that take megabytes to make.
var largeHostile = sync.OnceValue(func() []hostileCase {
	b := newBase()
	mib := make([]byte, RatioFloor) // zeros: under RatioFloor they may deflate past MaxRatio
	mibDeflated := deflated(mib)
	var spread []entry
	for i := range MaxTotal/RatioFloor + 1 {
		spread = append(spread, rawDeflate(fmt.Sprintf("assets/zeros%02d", i), mib, mibDeflated, RatioFloor))
	}
	bomb, smallBomb := make([]byte, 40<<20), make([]byte, 8<<20) // ~1000:1; the small one within MaxEntry
	bombDeflated, smallBombDeflated := deflated(bomb), deflated(smallBomb)
	return []hostileCase{
		{"over 64 MiB", make([]byte, MaxArchive+1), ErrLimit, ""},
		{"an entry over 16 MiB", b.with(entry{name: "assets/big", body: make([]byte, MaxEntry+1),
			edit: func(h *zip.FileHeader) { h.Method = zip.Store }}), ErrLimit, ""},
		{"a zip bomb", b.with(rawDeflate("assets/bomb", bomb, bombDeflated, uint64(len(bomb)))), ErrLimit, ""},
		{"a zip bomb within the entry limit", b.with(rawDeflate("assets/bomb", smallBomb, smallBombDeflated,
			uint64(len(smallBomb)))), ErrLimit, ""},
		{"a zip bomb declaring 1000 bytes", b.with(rawDeflate("assets/bomb", bomb, bombDeflated, 1000)), ErrLimit, ""},
		{"over 64 MiB in all", b.with(spread...), ErrLimit, ""},
	}
})

// smallHostile are the hostile archives of a few kilobytes.
var smallHostile = sync.OnceValue(func() []hostileCase {
	b := newBase()
	files, good, with, without, changed := b.files, b.good, b.with, b.without, b.changed
	x := []byte("x")
	many := slices.Clone(good)
	for i := len(many); i <= MaxEntries; i++ {
		many = append(many, entry{name: fmt.Sprintf("assets/%03d", i), body: x})
	}
	// The end record of 257 entries that counts 9: the directory is
	// walked, not trusted.
	lying := zipOf(many)
	binary.LittleEndian.PutUint16(lying[len(lying)-dirEndLen+8:], uint16(len(good)))
	binary.LittleEndian.PutUint16(lying[len(lying)-dirEndLen+10:], uint16(len(good)))
	lie := bytes.Repeat([]byte("abcdefgh"), 1000)
	trailing := append(deflated(lie), "after the stream"...)
	var integ integrityFile
	must(strictJSON(files[FileIntegrity], &integ))
	ghost, err := json.MarshalIndent(integrityFile{Version: 1,
		Files: append(slices.Clone(integ.Files), integrityItem{Path: "assets/ghost", SHA256: sha256Hex(nil)})}, "", "  ")
	must(err)
	twice, err := json.MarshalIndent(integrityFile{Version: 1, Files: append(slices.Clone(integ.Files), integ.Files[0])}, "", "  ")
	must(err)
	integ.Files = integ.Files[1:]
	short, err := json.MarshalIndent(integ, "", "  ")
	must(err)
	comment := zipOf(good)
	comment[len(comment)-2] = 1
	comment = append(comment, '!')
	long := "assets/" + strings.Repeat("x", MaxPath-len("assets/")+1)
	mode := func(m os.FileMode) func(*zip.FileHeader) { return func(h *zip.FileHeader) { h.SetMode(m) } }
	return []hostileCase{
		{"257 entries", zipOf(many), ErrLimit, ""},
		{"257 entries, counted as 9", lying, ErrLimit, ""},
		{"a header declaring less", with(rawDeflate("assets/liar", lie, deflated(lie), 10)), ErrLimit, ""},
		{"a header declaring more", with(rawDeflate("assets/liar", lie, deflated(lie), 10000)), ErrFormat, ""},
		{"parent segment", with(entry{name: "../x", body: x}), ErrPath, ""},
		{"inner parent segment", with(entry{name: "modules/../skill.toml", body: x}), ErrPath, ""},
		{"absolute", with(entry{name: "/etc/passwd", body: x}), ErrPath, "absolute"},
		{"backslash", with(entry{name: `assets\x`, body: x}), ErrPath, ""},
		{"leading ./", with(entry{name: "./skill.toml", body: x}), ErrPath, ""},
		{"empty segment", with(entry{name: "assets//x", body: x}), ErrPath, ""},
		{"NUL", with(entry{name: "assets/a\x00b", body: x}), ErrPath, ""},
		{"a control character", with(entry{name: "assets/a\x1bb", body: x}), ErrPath, ""},
		{"not UTF-8", with(entry{name: "assets/\xff", body: x}), ErrPath, ""},
		{"a path over 256 bytes", with(entry{name: long, body: x}), ErrPath, ""},
		{"too deep", with(entry{name: "assets/a/b/c/d/e", body: x}), ErrPath, ""},
		{"a duplicate", with(entry{name: "skill.toml", body: x}), ErrPath, ""},
		{"a case duplicate", with(entry{name: "SKILL.toml", body: x}), ErrPath, ""},
		{"a Kelvin-sign duplicate", with(entry{name: "assets/k", body: x}, entry{name: "assets/\u212a", body: x}), ErrPath, ""},
		{"a long-s duplicate", with(entry{name: "assets/S", body: x}, entry{name: "assets/\u017f", body: x}), ErrPath, ""},
		{"a directory entry", with(entry{name: "assets/dir/"}), ErrPath, "a directory entry"},
		{"a symlink", with(entry{name: "assets/link", body: []byte("/etc/passwd"), edit: mode(os.ModeSymlink | 0o777)}), ErrPath, ""},
		{"a named pipe", with(entry{name: "assets/fifo", body: x, edit: mode(os.ModeNamedPipe | 0o644)}), ErrPath, ""},
		{"a symlink from an NTFS creator", with(entry{name: "assets/link", body: x, edit: func(h *zip.FileHeader) {
			h.CreatorVersion, h.ExternalAttrs = 11<<8|20, 0o120777<<16
		}}), ErrPath, ""},
		{"an MS-DOS directory", with(entry{name: "assets/dir", body: x, edit: func(h *zip.FileHeader) {
			h.CreatorVersion, h.ExternalAttrs = 20, msdosDir
		}}), ErrPath, ""},
		{"a Unix file with the MS-DOS directory bit", with(entry{name: "assets/dir", body: x, edit: func(h *zip.FileHeader) {
			h.ExternalAttrs |= msdosDir
		}}), ErrPath, ""},
		{"encrypted", with(entry{name: "assets/x", body: x, edit: func(h *zip.FileHeader) { h.Flags |= 0x1 }}), ErrFormat, ""},
		{"an unknown method", with(entry{name: "assets/x", body: x, edit: func(h *zip.FileHeader) {
			h.Method, h.CRC32, h.CompressedSize64, h.UncompressedSize64 = 99, crc32.ChecksumIEEE(x), 1, 1
		}}), ErrFormat, ""},
		{"a wrong CRC-32", with(entry{name: "assets/x", body: x, raw: true, edit: func(h *zip.FileHeader) {
			h.Method, h.CRC32, h.CompressedSize64, h.UncompressedSize64 = zip.Store, 1, 1, 1
		}}), ErrFormat, "CRC-32"},
		{"bytes after a compressed stream", with(rawDeflate("assets/x", lie, trailing, uint64(len(lie)))), ErrFormat, "after its compressed stream"},
		{"an archive comment", comment, ErrFormat, "end of central directory"},
		{"bytes after the archive", append(zipOf(good), 0), ErrFormat, "end of central directory"},
		{"bytes before the archive", append([]byte{0}, zipOf(good)...), ErrFormat, "does not end where"},
		{"not a ZIP", []byte("not a zip"), ErrFormat, ""},
		{"no signature.json", without(FileSignature), ErrLayout, ""},
		{"no integrity.json", without(FileIntegrity), ErrLayout, ""},
		{"no skill.toml", without(FileManifest), ErrLayout, ""},
		{"no module", without("modules/hello.wasm"), ErrLayout, ""},
		{"a file outside the layout", with(entry{name: "run.sh", body: x}), ErrLayout, ""},
		{"not a module in modules/", with(entry{name: "modules/run.sh", body: x}), ErrLayout, ""},
		{"a module in a subdirectory", with(entry{name: "modules/a/b.wasm", body: x}), ErrLayout, ""},
		{"an unlisted file", with(entry{name: "assets/extra", body: x}), ErrIntegrity, "not listed"},
		{"a file missing from the integrity list", changed(FileIntegrity, short), ErrIntegrity, "not listed"},
		{"a file listed that is not there", changed(FileIntegrity, ghost), ErrIntegrity, "it lists"},
		{"a file listed twice", changed(FileIntegrity, twice), ErrIntegrity, "it lists"},
		{"a changed module", changed("modules/hello.wasm", []byte("\x00asm\x01\x00\x00\x00")), ErrIntegrity, "not the listed"},
		{"a changed manifest", changed(FileManifest, []byte(`skill_id = "acme.evil"`)), ErrIntegrity, ""},
		{"unsigned", changed(FileSignature, []byte(`{}`)), ErrSignatureFormat, ""},
		{"signature.json with an unknown field",
			changed(FileSignature, bytes.Replace(files[FileSignature], []byte("{"), []byte(`{"x": 1,`), 1)), ErrSignatureFormat, "unknown field"},
		{"signature.json of another algorithm",
			changed(FileSignature, bytes.Replace(files[FileSignature], []byte(`"ed25519"`), []byte(`"ed448"`), 1)), ErrSignatureFormat, "algorithm"},
		{"another publisher in signature.json",
			changed(FileSignature, bytes.Replace(files[FileSignature], []byte(`"acme"`), []byte(`"acne"`), 1)), ErrSignatureFormat, ""},
		{"not the archive Pack writes", zipOf(good), ErrFormat, "canonical"},
	}
})

func TestOpenRefusesHostileArchives(t *testing.T) {
	t.Parallel()
	for _, tc := range hostile() {
		if _, err := Open(tc.data); !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("%s: %v, want %v (%q)", tc.name, err, tc.want, tc.msg)
		}
	}
}

// TestOpenMemory: what Open allocates for an archive is in proportion to
// what the archive's bytes can decompress to, not to what its headers
// claim, and a refusal by the headers costs next to nothing. Not
// parallel: it reads the process's allocation counter.
func TestOpenMemory(t *testing.T) {
	for _, tc := range hostile() {
		n := allocated(func() { Open(tc.data) })
		if limit := allocBudget(tc.data); n > limit {
			t.Errorf("%s: %d bytes allocated; the budget is %d", tc.name, n, limit)
		}
		switch tc.name {
		case "257 entries", "257 entries, counted as 9", "a zip bomb", "a zip bomb within the entry limit", "an entry over 16 MiB",
			"over 64 MiB in all":
			if n > 64<<10 {
				t.Errorf("%s: %d bytes allocated before the refusal", tc.name, n)
			}
		}
	}
	data := packedSkill(t)
	if n := allocated(func() { Open(data) }); n > allocBudget(data) {
		t.Errorf("the test artifact: %d bytes allocated", n)
	}
}

// allocBudget is the most Open may allocate for data: twice what its
// bytes can decompress to (deflate expands at most maxInflate:1), within
// MaxTotal, plus the archive re-encoded and the compressors' state.
func allocBudget(data []byte) uint64 {
	return 2*uint64(min(MaxTotal, maxInflate*len(data))) + 8*uint64(len(data)) + 2<<20
}

func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// resigned is files with integrity.json made again (unless keep) and
// signed by key, encoded canonically: what a publisher could sign.
func resigned(t *testing.T, files map[string][]byte, key ed25519.PrivateKey, keep bool) []byte {
	t.Helper()
	var err error
	if !keep {
		if files[FileIntegrity], err = integrity(files); err != nil {
			t.Fatal(err)
		}
	}
	d := PayloadDigest(files)
	pub := publicKey(key)
	s := Signature{Publisher: testInfo.Publisher, KeyID: attest.PublicKeyID(pub), PublicKey: pub, Sig: Sign(key, d)}
	if files[FileSignature], err = signatureJSON(s, d); err != nil {
		t.Fatal(err)
	}
	data, err := encode(files)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOpenRefusesWhatPackWouldNotWrite: a signed artifact whose integrity
// list, SBOM or provenance is not what Pack generates for its files is
// refused, though every digest in it holds.
func TestOpenRefusesWhatPackWouldNotWrite(t *testing.T) {
	t.Parallel()
	key := testKey("publisher")
	if err := openVerify(resigned(t, packedFiles(t), key, false), key); err != nil {
		t.Fatalf("signed again unchanged: %v", err)
	}
	other := testInfo
	other.Publisher = "evil"
	for _, tc := range []struct {
		name string
		edit func(files map[string][]byte) (keep bool)
		want error
	}{
		{"an SBOM missing a module", func(files map[string][]byte) bool {
			files[FileSBOM] = bytes.Replace(files[FileSBOM], []byte(`"modules/hello.wasm"`), []byte(`"modules/other.wasm"`), 1)
			return false
		}, ErrIntegrity},
		{"an SBOM with a timestamp", func(files map[string][]byte) bool {
			files[FileSBOM] = bytes.Replace(files[FileSBOM], []byte(`"metadata": {`), []byte(`"metadata": {"timestamp": "2026-01-01T00:00:00Z",`), 1)
			return false
		}, ErrIntegrity},
		{"a provenance subject's wrong digest", func(files map[string][]byte) bool {
			files[FileProvenance] = bytes.Replace(files[FileProvenance], []byte(sha256Hex(files[FileManifest])), []byte(sha256Hex(nil)), 1)
			return false
		}, ErrIntegrity},
		{"an integrity list out of order", func(files map[string][]byte) bool {
			var list integrityFile
			must(strictJSON(files[FileIntegrity], &list))
			slices.Reverse(list.Files)
			files[FileIntegrity], _ = json.MarshalIndent(list, "", "  ")
			return true
		}, ErrIntegrity},
		{"a provenance and SBOM of another publisher than signature.json's", func(files map[string][]byte) bool {
			files[FileSBOM], _ = sbom(files, other)
			files[FileProvenance], _ = provenance(files, other)
			return false
		}, ErrSignatureFormat},
	} {
		files := packedFiles(t)
		keep := tc.edit(files)
		if err := openVerify(resigned(t, files, key, keep), key); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
