package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection/index/internal/chunked"
)

// A snapshot is the index's records written out, so that a source can
// start from it and replay only what changed since (projection.Index
// does, from the views bucket's revision the snapshot is consistent
// with). It holds the entries as the index keeps them (entry.go: packed
// ids, names as numbers into a table of the names, times in epoch ms),
// the sample message of each fingerprint, and what the source asks to
// keep with them (SnapshotInfo). So it is about 80 bytes a record, and
// restoring one does what a bulk load does with the entries, without
// decoding a view.
//
// The layout, every integer a varint (encoding/binary; signed ones
// zig-zag), every string its length and its bytes:
//
//	magic "amends-index\x00", format version
//	revision, origin, taken, records, skipped keys (key, revision, why)
//	names: count, then each name (the interner's, "" excluded)
//	samples: count, then (fingerprint's name number, message)
//	entries: count, then each entry: id, eventID, aggregateID (packed),
//	  version, executeAt, timeoutAt, nextRetryAt, retries, maxRetries,
//	  the seven names' numbers, kind, status, recoverable (a byte each)
//	CRC-32C of everything before it, 4 bytes little-endian
//
// A reader checks the magic, the version and the checksum first, then
// every count against the bytes left and every string against its bound,
// every number against the table and every enum against its values, so
// that no input can make it panic or allocate more than the input's size
// allows; any failure is an error wrapping ErrInvalidSnapshot.

// SnapshotVersion is the snapshot format this package writes and reads.
// A snapshot of another version is refused (ErrSnapshotVersion): the
// source loads in full instead and the next snapshot is of this one.
const SnapshotVersion = 1

// snapshotMagic opens every snapshot.
const snapshotMagic = "amends-index\x00"

// The bounds a snapshot reader holds every string to.
const (
	maxSnapshotString = 64 << 10 // ids, names, keys
	maxSnapshotWhy    = 1024     // a skipped key's reason
	minSnapshotEntry  = 20       // the fewest bytes an entry takes
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// SnapshotInfo is what a snapshot says of itself besides its records:
// what the source keeps with them to tell whether it can start from it.
type SnapshotInfo struct {
	// Revision is the source's position the records are consistent with
	// (projection: the views bucket's stream sequence).
	Revision uint64
	// Origin tells the source's instances apart (projection: when the
	// bucket's stream was created, in Unix nanoseconds), so that a
	// snapshot of a bucket since deleted and created again is not used.
	Origin int64
	// Taken is when the snapshot was taken, in epoch ms.
	Taken int64
	// Records is how many records it holds (AppendSnapshot sets it).
	Records int
	// Skipped are keys of the source whose values the index could not
	// read (projection: views that are not valid), which the source
	// wants to know of again after a restart.
	Skipped []SkippedKey
}

// SkippedKey is a key of the source with a value the index skipped.
type SkippedKey struct {
	Key      string
	Revision uint64
	Why      string
}

// AppendSnapshot appends a snapshot of the index's records, with info
// (its Records set to the count), to dst and returns it. It takes the
// read lock: queries go on meanwhile, updates wait (about 0.1 s a million
// records). The caller makes sure no update changes the records between
// the revision it puts in info and the call (projection.Index holds its
// own lock around both). An index being loaded in bulk answers as if it
// were empty and has no snapshot to give: ErrLoading.
func (ix *Index) AppendSnapshot(dst []byte, info SnapshotInfo) ([]byte, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.loading != nil {
		return dst, ErrLoading
	}
	info.Records = ix.byID.Len()
	return ix.appendSnapshot(dst, info, nil), nil
}

// AppendSnapshots writes a snapshot of each of n parts of the index's
// records, as AppendSnapshot does, with infos[i] (its Records set to the
// count) for part i: part returns the part of a record, given its
// function's processor and its id, or a negative number for a record of
// none. It reads the records once to sort them, so n parts cost about one
// snapshot of the index. It takes the read lock, as AppendSnapshot does;
// an index being loaded in bulk is ErrLoading.
func (ix *Index) AppendSnapshots(infos []SnapshotInfo, part func(processor, id string) int) ([][]byte, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.loading != nil {
		return nil, ErrLoading
	}
	n := len(infos)
	of := make([]int32, ix.slots.n) // the part of each slot, -1: none
	for i := range infos {
		infos[i].Records = 0
	}
	ix.slots.each(func(slot uint32, e *entry) bool {
		p := part(ix.names.name(e.fnProcessor), unpackID(e.id))
		if p < 0 || p >= n {
			p = -1
		} else {
			infos[p].Records++
		}
		of[slot] = int32(p)
		return true
	})
	out := make([][]byte, n)
	for i := range n {
		out[i] = ix.appendSnapshot(nil, infos[i], func(slot uint32) bool { return of[slot] == int32(i) })
	}
	return out, nil
}

// appendSnapshot appends a snapshot of the records in the slots keep
// keeps (nil: every one), info.Records of them. The caller holds the
// read lock.
func (ix *Index) appendSnapshot(dst []byte, info SnapshotInfo, keep func(slot uint32) bool) []byte {
	start := len(dst)
	dst = append(dst, snapshotMagic...)
	dst = binary.AppendUvarint(dst, SnapshotVersion)
	dst = appendInfo(dst, &info)
	names := ix.names.names[1:]
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, n := range names {
		dst = appendString(dst, n)
	}
	dst = binary.AppendUvarint(dst, uint64(len(ix.samples)))
	for fp, msg := range ix.samples {
		dst = binary.AppendUvarint(dst, uint64(fp))
		dst = appendString(dst, msg)
	}
	dst = binary.AppendUvarint(dst, uint64(info.Records))
	ix.slots.each(func(slot uint32, e *entry) bool {
		if keep == nil || keep(slot) {
			dst = appendEntry(dst, e)
		}
		return true
	})
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

func appendInfo(dst []byte, info *SnapshotInfo) []byte {
	dst = binary.AppendUvarint(dst, info.Revision)
	dst = binary.AppendVarint(dst, info.Origin)
	dst = binary.AppendVarint(dst, info.Taken)
	dst = binary.AppendUvarint(dst, uint64(info.Records))
	dst = binary.AppendUvarint(dst, uint64(len(info.Skipped)))
	for _, k := range info.Skipped {
		dst = appendString(dst, k.Key)
		dst = binary.AppendUvarint(dst, k.Revision)
		dst = appendString(dst, truncateWhy(k.Why))
	}
	return dst
}

func appendEntry(dst []byte, e *entry) []byte {
	dst = appendString(dst, e.id)
	dst = appendString(dst, e.eventID)
	dst = appendString(dst, e.aggregateID)
	dst = binary.AppendUvarint(dst, e.version)
	dst = binary.AppendVarint(dst, e.executeAt)
	dst = binary.AppendVarint(dst, e.timeoutAt)
	dst = binary.AppendVarint(dst, e.nextRetryAt)
	dst = binary.AppendVarint(dst, int64(e.retries))
	dst = binary.AppendVarint(dst, int64(e.maxRetries))
	for _, n := range [...]uint32{e.aggContext, e.aggType, e.fnContext, e.fnProcessor, e.fnName, e.errorCode, e.fingerprint} {
		dst = binary.AppendUvarint(dst, uint64(n))
	}
	return append(dst, e.kind, e.status, e.recover)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// truncateWhy cuts a reason to maxSnapshotWhy bytes (a reader refuses
// longer ones), without care for UTF-8: it is only shown.
func truncateWhy(s string) string {
	if len(s) > maxSnapshotWhy {
		return s[:maxSnapshotWhy]
	}
	return s
}

// ReadSnapshotInfo checks data's magic, format version and checksum and
// returns what the snapshot says of itself, without reading its records.
// A snapshot of another format version is an error wrapping
// ErrSnapshotVersion; any other fault one wrapping ErrInvalidSnapshot.
// It never panics, whatever data holds.
func ReadSnapshotInfo(data []byte) (SnapshotInfo, error) {
	r, err := openSnapshot(data)
	if err != nil {
		return SnapshotInfo{}, err
	}
	info := r.info()
	return info, r.err
}

// openSnapshot checks data's frame and returns a reader at its header.
func openSnapshot(data []byte) (*snapReader, error) {
	if len(data) < len(snapshotMagic)+1+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("not an index snapshot (no magic %q): %w", snapshotMagic, ErrInvalidSnapshot)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	r := &snapReader{b: body[len(snapshotMagic):]}
	if v := r.uvarint("version"); r.err == nil && v != SnapshotVersion {
		return nil, fmt.Errorf("snapshot format version %d, this build reads %d: %w", v, SnapshotVersion, ErrSnapshotVersion)
	}
	if r.err != nil {
		return nil, r.err
	}
	if got := crc32.Checksum(body, crcTable); got != sum {
		return nil, fmt.Errorf("snapshot checksum %08x, its bytes sum to %08x: %w", sum, got, ErrInvalidSnapshot)
	}
	return r, nil
}

// LoadSnapshot puts every record of the snapshot data into the index, as
// a load's Puts would, and returns what the snapshot says of itself. It
// must be called between BeginLoad and EndLoad of a load into an empty
// index (made in bulk), else it returns ErrNotEmpty. A snapshot that does
// not read (ErrInvalidSnapshot, ErrSnapshotVersion; one that holds a
// record twice is ErrInvalidSnapshot too) leaves the index empty, as it
// was: the source then loads in full within the same load. It never
// panics, whatever data holds.
func (b *Batch) LoadSnapshot(data []byte) (SnapshotInfo, error) {
	ix := b.ix
	if ix.loading == nil || len(ix.loading) > 0 || ix.slots.n > 0 {
		return SnapshotInfo{}, ErrNotEmpty
	}
	r, err := openSnapshot(data)
	if err != nil {
		return SnapshotInfo{}, err
	}
	info := r.info()
	samples := maps.Clone(ix.samples)
	if err := ix.readRecords(r, &info); err != nil {
		ix.slots = arena{} // empty again, as it was
		ix.loading, ix.snapIDs = map[string]uint32{}, nil
		ix.samples = samples
		return SnapshotInfo{}, err
	}
	return info, nil
}

// readRecords reads the names, samples and entries of a snapshot whose
// header r has read. The caller holds the write lock.
func (ix *Index) readRecords(r *snapReader, info *SnapshotInfo) error {
	names := ix.readNames(r)
	if r.err != nil {
		return r.err
	}
	samples, err := readSamples(r, names)
	if err != nil {
		return err
	}
	records := r.count("records", minSnapshotEntry)
	if r.err == nil && records != info.Records {
		return r.fail("the header counts %d records, the entries %d", info.Records, records)
	}
	keys := make([]uint64, 0, records)
	var fp uint32
	msg := func() string { return samples[fp] }
	for range records {
		e, err := readEntry(r, names)
		if err != nil {
			return err
		}
		fp = e.fingerprint
		// Added as loadPut adds a new record, with snapIDs (below) for the
		// loading map.
		e.gen = ix.gen
		slot := ix.slots.add(e)
		ix.keepSample(ix.slots.at(slot), msg)
		keys = append(keys, lookupKey(e.id, slot))
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the last entry", len(r.b))
	}
	if r.err != nil {
		return r.err
	}
	chunked.SortValues(keys)
	if err := ix.distinctIDs(keys); err != nil {
		return r.fail("%v", err)
	}
	ix.snapIDs = keys
	return nil
}

// snapNames maps a snapshot's name numbers to the index's (0 is no name).
type snapNames []uint32

// readNames reads the snapshot's names into the index's.
func (ix *Index) readNames(r *snapReader) snapNames {
	n := r.count("names", 1)
	names := make(snapNames, 1, n+1)
	for range n {
		names = append(names, intern(ix.names, r.bytes("name", maxSnapshotString)))
	}
	return names
}

// name reads field, a name number, as the index's; one out of range is
// the reader's fault.
func (names snapNames) name(r *snapReader, field string) uint32 {
	i := r.uvarint(field)
	if r.err == nil && i >= uint64(len(names)) {
		r.fail("%s refers to name %d of %d", field, i, len(names)-1)
	}
	if r.err != nil {
		return 0
	}
	return names[i]
}

// readSamples reads the sample messages of the snapshot's fingerprints.
func readSamples(r *snapReader, names snapNames) (map[uint32]string, error) {
	var samples map[uint32]string
	for range r.count("samples", 2) {
		fp := names.name(r, "sample's fingerprint")
		msg := r.bytes("sample", api.MaxSampleBytes)
		if r.err != nil {
			return nil, r.err
		}
		if fp == 0 {
			return nil, r.fail("a sample of no fingerprint")
		}
		if samples == nil {
			samples = map[uint32]string{}
		}
		samples[fp] = string(msg)
	}
	return samples, nil
}

// readEntry reads one record of the snapshot, its ids in the index's
// packed form.
func readEntry(r *snapReader, names snapNames) (entry, error) {
	name := func(field string) uint32 { return names.name(r, field) }
	var e entry
	e.id = string(r.bytes("id", maxSnapshotString))
	e.eventID = string(r.bytes("eventId", maxSnapshotString))
	e.aggregateID = string(r.bytes("aggregateId", maxSnapshotString))
	e.version = r.uvarint("version")
	e.executeAt = r.varint("executeAt")
	e.timeoutAt = r.varint("timeoutAt")
	e.nextRetryAt = r.varint("nextRetryAt")
	e.retries = r.int32("retries")
	e.maxRetries = r.int32("maxRetries")
	e.aggContext, e.aggType = name("aggregateContext"), name("aggregateType")
	e.fnContext, e.fnProcessor, e.fnName = name("functionContext"), name("processor"), name("function")
	e.errorCode, e.fingerprint = name("errorCode"), name("fingerprint")
	e.kind = r.enum("functionKind", len(aggregate.FunctionKinds))
	e.status = r.enum("status", len(aggregate.Statuses))
	e.recover = r.enum("recoverable", len(aggregate.Recoverabilities))
	switch {
	case r.err != nil:
		return e, r.err
	case !canonicalID(e.id):
		return e, r.fail("record id %q is not in the index's packed form", e.id)
	case e.eventID != "" && !canonicalID(e.eventID):
		return e, r.fail("event id %q is not in the index's packed form", e.eventID)
	}
	return e, nil
}

// distinctIDs returns an error naming an id that two of the sorted
// lookup keys hold. Ids of one hash are told apart with a set, so that
// ids made to collide cost no more than a map of them.
func (ix *Index) distinctIDs(keys []uint64) error {
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j]>>32 == keys[i]>>32 {
			j++
		}
		if j-i > 1 {
			seen := make(map[string]bool, j-i)
			for _, k := range keys[i:j] {
				id := ix.slots.at(uint32(k)).id
				if seen[id] {
					return fmt.Errorf("record id %q twice", id)
				}
				seen[id] = true
			}
		}
		i = j
	}
	return nil
}

// canonicalID reports whether p is what packID makes of some id, so that
// looking the id up finds it.
func canonicalID(p string) bool {
	if p == "" {
		return false
	}
	if len(p) == 16 && p[0] != 0 {
		return true // a UUID's bytes
	}
	return packID(unpackID(p)) == p
}
