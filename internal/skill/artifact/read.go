package artifact

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// ZIP records (APPNOTE.TXT 4.3.12, 4.3.16) that countEntries reads before
// archive/zip does.
const (
	dirEndLen    = 22
	dirEndSig    = 0x06054b50
	dirHeaderLen = 46
	dirHeaderSig = 0x02014b50
)

// Bits of an entry's header that Open refuses.
const (
	encryptedFlags = 0x1 | 0x40 | 0x2000 // encrypted, strong encryption, encrypted central directory
	unixTypeMask   = 0o170000            // S_IFMT in the high half of the external attributes
	unixRegular    = 0o100000            // S_IFREG
	msdosDir       = 0x10
)

// countEntries counts the central directory's records without allocating,
// so that an archive of more than MaxEntries files is refused before
// archive/zip reads its directory into memory, and before anything is
// decompressed. It walks the records as archive/zip does (from the end
// record's offset while the signature holds), and refuses what Pack never
// writes: an archive comment or bytes after the end record, a directory
// that does not end where the end record starts, a count that is not the
// directory's, ZIP64 and multi-disk markers.
func countEntries(data []byte) error {
	if len(data) < dirEndLen || binary.LittleEndian.Uint32(data[len(data)-dirEndLen:]) != dirEndSig {
		return fmt.Errorf("%w: no end of central directory record at the end (not a ZIP, or a comment or bytes after it)", ErrFormat)
	}
	end := data[len(data)-dirEndLen:]
	u16 := func(b []byte, at int) int { return int(binary.LittleEndian.Uint16(b[at:])) }
	u32 := func(b []byte, at int) int64 { return int64(binary.LittleEndian.Uint32(b[at:])) }
	records, size, off := u16(end, 10), u32(end, 12), u32(end, 16)
	switch {
	case u16(end, 4) != 0 || u16(end, 6) != 0 || u16(end, 8) != records || u16(end, 20) != 0:
		return fmt.Errorf("%w: a multi-disk archive or an archive comment", ErrFormat)
	case off+size != int64(len(data)-dirEndLen):
		return fmt.Errorf("%w: the central directory does not end where its end record starts", ErrFormat)
	}
	n, pos, stop := 0, int(off), int(off+size)
	for pos+dirHeaderLen <= stop && binary.LittleEndian.Uint32(data[pos:]) == dirHeaderSig {
		if n++; n > MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrLimit, MaxEntries)
		}
		pos += dirHeaderLen + u16(data, pos+28) + u16(data, pos+30) + u16(data, pos+32)
	}
	if n != records || pos != stop {
		return fmt.Errorf("%w: the central directory holds %d records, not the %d its end record counts", ErrFormat, n, records)
	}
	return nil
}

// readFiles checks every entry's header, then decompresses them all.
func readFiles(data []byte, entries []*zip.File) (map[string][]byte, error) {
	names := make([]string, len(entries))
	var total uint64
	for i, f := range entries {
		if err := checkHeader(f); err != nil {
			return nil, err
		}
		names[i], total = f.Name, total+f.UncompressedSize64
	}
	if err := checkNames(names); err != nil {
		return nil, err
	}
	if total > MaxTotal {
		return nil, fmt.Errorf("%w: the files declare %d bytes in all; the limit is %d", ErrLimit, total, MaxTotal)
	}
	files := make(map[string][]byte, len(entries))
	var fr io.ReadCloser
	for _, f := range entries {
		b, err := readEntry(data, f, &fr)
		if err != nil {
			return nil, err
		}
		files[f.Name] = b
	}
	return files, nil
}

// checkHeader refuses an entry by its header alone: its path, its file
// type, its encryption, its method and its declared sizes.
func checkHeader(f *zip.File) error {
	if err := checkPath(f.Name); err != nil {
		return err
	}
	// Both the mode archive/zip derives (which depends on the system the
	// creator claims) and the raw bits, whatever the creator claims.
	mode := f.Mode()
	if unixType := f.ExternalAttrs >> 16 & unixTypeMask; unixType != 0 && unixType != unixRegular {
		mode = (&zip.FileHeader{CreatorVersion: creatorUnix, ExternalAttrs: f.ExternalAttrs}).Mode()
	}
	switch {
	case mode.Type() != 0 || f.ExternalAttrs&msdosDir != 0:
		return fmt.Errorf("%w: %s is a %s (external attributes %#08x), not a regular file", ErrPath, f.Name, kind(mode), f.ExternalAttrs)
	case f.Flags&encryptedFlags != 0:
		return fmt.Errorf("%w: %s is encrypted", ErrFormat, f.Name)
	case f.Method != zip.Store && f.Method != zip.Deflate:
		return fmt.Errorf("%w: %s uses compression method %d (only store and deflate)", ErrFormat, f.Name, f.Method)
	}
	return checkSize(f.Name, f.UncompressedSize64, f.CompressedSize64)
}

// maxInflate is deflate's greatest expansion: a 258-byte match in 2 bits.
const maxInflate = 1032

// readEntry decompresses f's data, which must lie within the archive,
// reading at most one byte more than its header declares: an entry that
// inflates past its header, or falls short of it, or whose compressed
// data does not end where its stream does, or whose CRC-32 differs, is
// refused. It allocates for what the compressed bytes can hold, not for
// what the header claims. *fr is a decompressor reused from entry to
// entry.
func readEntry(data []byte, f *zip.File, fr *io.ReadCloser) ([]byte, error) {
	off, err := f.DataOffset()
	if err != nil || off < 0 || uint64(off)+f.CompressedSize64 > uint64(len(data)) {
		return nil, fmt.Errorf("%w: %s: its data is not within the archive", ErrFormat, f.Name)
	}
	compressed := data[off : uint64(off)+f.CompressedSize64]
	raw := bytes.NewReader(compressed) // an io.ByteReader: flate reads no further than its stream
	var r io.Reader = raw
	most := len(compressed)
	if f.Method == zip.Deflate {
		if *fr == nil {
			*fr = flate.NewReader(raw)
		} else if err := (*fr).(flate.Resetter).Reset(raw, nil); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrFormat, f.Name, err)
		}
		r, most = *fr, maxInflate*len(compressed)
	}
	declared := int(f.UncompressedSize64) // at most MaxEntry (checkHeader)
	b, err := readAtMost(r, declared+1, min(declared, most)+1)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s does not decompress: %v", ErrFormat, f.Name, err)
	case len(b) > declared:
		return nil, fmt.Errorf("%w: %s inflates past the %d bytes its header declares", ErrLimit, f.Name, declared)
	case len(b) < declared:
		return nil, fmt.Errorf("%w: %s holds %d bytes, not the %d its header declares", ErrFormat, f.Name, len(b), declared)
	case raw.Len() != 0:
		return nil, fmt.Errorf("%w: %s has %d bytes after its compressed stream", ErrFormat, f.Name, raw.Len())
	case crc32.ChecksumIEEE(b) != f.CRC32:
		return nil, fmt.Errorf("%w: %s does not match its CRC-32", ErrFormat, f.Name)
	}
	return b, nil
}

// readAtMost reads r to its end, or to limit bytes, into a buffer first
// allocated for hint bytes.
func readAtMost(r io.Reader, limit, hint int) ([]byte, error) {
	buf := make([]byte, 0, hint)
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(cap(buf), 512), limit-len(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}
