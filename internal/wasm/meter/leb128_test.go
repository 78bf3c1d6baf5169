package meter

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestUlebEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x01}},
		{624485, []byte{0xe5, 0x8e, 0x26}},
		{math.MaxUint32, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{math.MaxUint64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	} {
		if got := appendUleb(nil, tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("appendUleb(%d) = %x, want %x", tc.v, got, tc.want)
		}
		v, n, err := decodeUleb(tc.want, 64)
		if err != nil || v != tc.v || n != len(tc.want) {
			t.Errorf("decodeUleb(%x) = %d, %d, %v, want %d, %d", tc.want, v, n, err, tc.v, len(tc.want))
		}
	}
}

func TestSlebEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0x00}},
		{-1, []byte{0x7f}},
		{63, []byte{0x3f}},
		{64, []byte{0xc0, 0x00}},
		{-64, []byte{0x40}},
		{-65, []byte{0xbf, 0x7f}},
		{-123456, []byte{0xc0, 0xbb, 0x78}},
		{math.MinInt32, []byte{0x80, 0x80, 0x80, 0x80, 0x78}},
		{math.MaxInt64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}},
		{math.MinInt64, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}},
	} {
		if got := appendSleb(nil, tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("appendSleb(%d) = %x, want %x", tc.v, got, tc.want)
		}
		v, n, err := decodeSleb(tc.want, 64)
		if err != nil || v != tc.v || n != len(tc.want) {
			t.Errorf("decodeSleb(%x) = %d, %d, %v, want %d, %d", tc.want, v, n, err, tc.v, len(tc.want))
		}
	}
}

func TestLebRoundTrip(t *testing.T) {
	t.Parallel()
	for i := 0; i < 64; i++ {
		for _, u := range []uint64{1<<i - 1, 1 << i, 1<<i + 1} {
			if v, _, err := decodeUleb(appendUleb(nil, u), 64); err != nil || v != u {
				t.Errorf("uleb %d: got %d, %v", u, v, err)
			}
			s := int64(u)
			for _, x := range []int64{s, -s} {
				if v, _, err := decodeSleb(appendSleb(nil, x), 64); err != nil || v != x {
					t.Errorf("sleb %d: got %d, %v", x, v, err)
				}
			}
		}
	}
}

func TestLebWidths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     []byte
		bits   uint
		signed bool
		want   int64
		err    error
	}{
		{"padded zero is canonical enough", []byte{0x80, 0x80, 0x00}, 32, false, 0, nil},
		{"u32 max", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 32, false, math.MaxUint32, nil},
		{"u32 overflow", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 32, false, 0, errLEBOverflow},
		{"u32 too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 32, false, 0, errLEBOverflow},
		{"truncated", []byte{0x80, 0x80}, 32, false, 0, errLEBTruncated},
		{"empty", nil, 32, false, 0, errLEBTruncated},
		{"s32 min", []byte{0x80, 0x80, 0x80, 0x80, 0x78}, 32, true, math.MinInt32, nil},
		{"s32 max", []byte{0xff, 0xff, 0xff, 0xff, 0x07}, 32, true, math.MaxInt32, nil},
		{"s32 overflow", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 32, true, 0, errLEBOverflow},
		{"s32 bad sign bits", []byte{0x80, 0x80, 0x80, 0x80, 0x70}, 32, true, 0, errLEBOverflow},
		{"s33 type index", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 33, true, math.MaxUint32, nil},
		{"s33 empty block type", []byte{0x40}, 33, true, -64, nil},
		{"s64 overflow", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 64, true, 0, errLEBOverflow},
		{"u64 overflow", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, 64, false, 0, errLEBOverflow},
	} {
		var got int64
		var err error
		if tc.signed {
			got, _, err = decodeSleb(tc.in, tc.bits)
		} else {
			var u uint64
			u, _, err = decodeUleb(tc.in, tc.bits)
			got = int64(u)
		}
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}
