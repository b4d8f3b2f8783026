package index

import (
	"encoding/binary"
	"fmt"

	"github.com/amends-dev/amends/internal/bounds"
)

// snapReader reads a snapshot's varints and strings, remembering the
// first fault; after one, every read returns zero.
type snapReader struct {
	b   []byte
	err error
}

func (r *snapReader) fail(format string, args ...any) error {
	if r.err == nil {
		r.err = fmt.Errorf("snapshot: "+format+": %w", append(args, ErrInvalidSnapshot)...)
	}
	return r.err
}

func (r *snapReader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s: not a varint", field)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *snapReader) varint(field string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("%s: not a varint", field)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *snapReader) int32(field string) int32 {
	v := r.varint(field)
	if !bounds.Within(v, -1<<31, 1<<31-1) {
		r.fail("%s %d is out of the range of a 32-bit integer", field, v)
		return 0
	}
	return int32(v)
}

// count reads a count of items of at least size bytes each, refusing one
// that the bytes left cannot hold.
func (r *snapReader) count(field string, size int) int {
	n := r.uvarint(field)
	if r.err == nil && n > uint64(len(r.b)/size) {
		r.fail("%d %s cannot fit in the %d bytes left", n, field, len(r.b))
		return 0
	}
	return int(n)
}

// bytes reads a string of at most max bytes; the result aliases the input.
func (r *snapReader) bytes(field string, max int) []byte {
	n := r.uvarint(field)
	if r.err != nil {
		return nil
	}
	if n > uint64(max) || n > uint64(len(r.b)) {
		r.fail("%s of %d bytes (at most %d, %d left)", field, n, max, len(r.b))
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// enum reads an enum's 1-based position among values (0: absent).
func (r *snapReader) enum(field string, values int) uint8 {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("%s: the snapshot ends", field)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	if int(v) > values {
		r.fail("%s %d is not one of its %d values", field, v, values)
		return 0
	}
	return v
}

// info reads the header after the version.
func (r *snapReader) info() SnapshotInfo {
	info := SnapshotInfo{Revision: r.uvarint("revision"), Origin: r.varint("origin"), Taken: r.varint("taken")}
	records := r.uvarint("records")
	if r.err == nil && records > uint64(len(r.b)/minSnapshotEntry) {
		r.fail("%d records cannot fit in the %d bytes left", records, len(r.b))
	}
	info.Records = int(records)
	for range r.count("skipped keys", 3) {
		k := SkippedKey{Key: string(r.bytes("skipped key", maxSnapshotString))}
		k.Revision = r.uvarint("skipped key's revision")
		k.Why = string(r.bytes("skipped key's reason", maxSnapshotWhy))
		if r.err != nil {
			break
		}
		info.Skipped = append(info.Skipped, k)
	}
	if r.err != nil {
		return SnapshotInfo{}
	}
	return info
}
