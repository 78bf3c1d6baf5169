package artifact

import (
	"archive/zip"
	"bytes"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"unicode/utf8"
)

// The fixed fields of every entry: made by and for ZIP 2.0 on Unix, a
// regular file with mode 0644, modified 1980-01-01 00:00:00 (the earliest
// MS-DOS time).
const (
	zipVersion     = 20
	creatorUnix    = 3 << 8
	modeRegular644 = (unixRegular | 0o644) << 16
	dosDate1980    = 1<<5 | 1 // year 1980+0, month 1, day 1
	dosTime0       = 0
	flagUTF8       = 0x800
)

// encode is the canonical encoding of files, the only one Pack writes and
// Open accepts: entries in byte order of their paths, each stored
// (uncompressed), with the fixed fields above, its CRC-32 and sizes in
// the local header (no data descriptor), no extra fields, no comments, no
// directory entries; then the central directory and its end record, with
// no comment.
//
// Every byte is fixed by the files alone. Entries are stored rather than
// deflated because compressed bytes are the compressor's: the Go project
// does not promise compress/flate's output across releases, and a
// canonical encoding that depended on it would make a Go upgrade refuse
// every artifact packed before it. Modules compress about 3:1, so an
// artifact is larger than it could be; the 64 MiB limit is on the files
// anyway.
//
// encode applies the limits Open does, so that Pack never makes an
// archive Open refuses.
func encode(files map[string][]byte) ([]byte, error) {
	paths := slices.Sorted(maps.Keys(files))
	if err := checkNames(paths); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	total := 0
	for _, p := range paths {
		b := files[p]
		if total += len(b); total > MaxTotal {
			return nil, fmt.Errorf("%w: the files are over %d bytes in all", ErrLimit, MaxTotal)
		}
		if err := checkSize(p, uint64(len(b)), uint64(len(b))); err != nil {
			return nil, err
		}
		w, err := zw.CreateRaw(entryHeader(p, b))
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
		if out.Len() > MaxArchive {
			return nil, fmt.Errorf("%w: the archive would be over %d bytes", ErrLimit, MaxArchive)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if out.Len() > MaxArchive {
		return nil, fmt.Errorf("%w: the archive would be %d bytes; the limit is %d", ErrLimit, out.Len(), MaxArchive)
	}
	return out.Bytes(), nil
}

// entryHeader is the header of path, stored. CreateRaw writes the MS-DOS
// time fields as they are (Modified would add an extra field), so the
// deprecated fields are the ones set.
func entryHeader(path string, content []byte) *zip.FileHeader {
	h := &zip.FileHeader{
		Name:               path,
		Method:             zip.Store,
		CreatorVersion:     creatorUnix | zipVersion,
		ReaderVersion:      zipVersion,
		ExternalAttrs:      modeRegular644,
		ModifiedDate:       dosDate1980,
		ModifiedTime:       dosTime0,
		CRC32:              crc32.ChecksumIEEE(content),
		CompressedSize64:   uint64(len(content)),
		UncompressedSize64: uint64(len(content)),
	}
	for _, r := range path {
		if r >= utf8.RuneSelf {
			h.Flags = flagUTF8 // as archive/zip's CreateHeader does: only when the name needs it
			break
		}
	}
	return h
}
