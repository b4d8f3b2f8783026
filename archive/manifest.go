package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
)

// Format is the manifest's format name; a manifest of another is refused.
const Format = "amends-archive/1"

// Bounds of a manifest.
const (
	maxManifestBytes = 64 << 20
	// MaxSweepRecords bounds the records of one sweep batch.
	MaxSweepRecords = 100000
)

// Manifest says what one sweep batch archived: Objects, one per function.
type Manifest struct {
	Format string `json:"format"`
	// Sweep is the batch's number (retention.SweepState's).
	Sweep uint64 `json:"sweep"`
	// CreatedAt is when it was written, epoch ms.
	CreatedAt int64    `json:"createdAt"`
	Objects   []Object `json:"objects"`
}

// Object is one object of a manifest.
type Object struct {
	Name     string                 `json:"name"`
	Function aggregate.FunctionInfo `json:"function"`
	// Records are the record ids it holds, in the object's order.
	Records []string `json:"records"`
	// Streams counts its lines; Bytes is its size and SHA256 its digest
	// (hex).
	Streams int    `json:"streams"`
	Bytes   int    `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// ManifestName is the name of sweep's manifest.
func ManifestName(sweep uint64) string { return fmt.Sprintf("sweep-%012d.manifest.json", sweep) }

// ObjectName is the name of sweep's object of function f.
func ObjectName(sweep uint64, f aggregate.FunctionInfo) string {
	h := sha256.Sum256([]byte(f.ContextName + "\x00" + f.ProcessorName + "\x00" + f.Name))
	return fmt.Sprintf("sweep-%012d-%s.ndjson.gz", sweep, hex.EncodeToString(h[:8]))
}

// WriteSweep archives the histories of one sweep batch: one object per
// function, then the manifest, each stored in sink and read back with its
// digest before the next. It returns the manifest once all of it is
// stored. Writing the same batch again (after a crash) overwrites the
// same names with the same content. Errors match ErrInvalid for records
// that are not whole histories (Record), or are the sink's.
func WriteSweep(ctx context.Context, sink Sink, sweep uint64, now time.Time, records []Record) (Manifest, error) {
	if len(records) == 0 || len(records) > MaxSweepRecords {
		return Manifest{}, fmt.Errorf("a sweep archives 1 to %d records, got %d: %w", MaxSweepRecords, len(records), ErrInvalid)
	}
	byFn := map[string][]Record{}
	var names []string
	for _, r := range records {
		n := ObjectName(sweep, r.Function)
		if _, ok := byFn[n]; !ok {
			names = append(names, n)
		}
		byFn[n] = append(byFn[n], r)
	}
	slices.Sort(names)
	m := Manifest{Format: Format, Sweep: sweep, CreatedAt: now.UnixMilli()}
	for _, n := range names {
		rs := byFn[n]
		data, streams, err := encodeObject(rs)
		if err != nil {
			return Manifest{}, err
		}
		sum := sha256.Sum256(data)
		o := Object{Name: n, Function: rs[0].Function, Streams: streams, Bytes: len(data), SHA256: hex.EncodeToString(sum[:])}
		for _, r := range rs {
			o.Records = append(o.Records, r.ID)
		}
		if err := putVerified(ctx, sink, n, data); err != nil {
			return Manifest{}, err
		}
		m.Objects = append(m.Objects, o)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := putVerified(ctx, sink, ManifestName(sweep), data); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// putVerified stores data and reads it back: a sweep removes nothing of
// what it could not read back.
func putVerified(ctx context.Context, sink Sink, name string, data []byte) error {
	if err := sink.Put(ctx, name, data); err != nil {
		return err
	}
	back, err := sink.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("read back %s: %w", name, err)
	}
	if sha256.Sum256(back) != sha256.Sum256(data) {
		return fmt.Errorf("read back %s from %s: the content differs from what was written", name, sink)
	}
	return nil
}

// ReadManifest reads and validates sweep's manifest: its format, sweep
// number, object names (those WriteSweep gives for each function),
// record ids and counts. Errors match ErrNotFound or ErrInvalid.
func ReadManifest(ctx context.Context, sink Sink, sweep uint64) (Manifest, error) {
	name := ManifestName(sweep)
	data, err := sink.Get(ctx, name)
	if err != nil {
		return Manifest{}, err
	}
	if len(data) > maxManifestBytes {
		return Manifest{}, fmt.Errorf("manifest %s is %d bytes, over %d: %w", name, len(data), maxManifestBytes, ErrTooLarge)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("manifest %s does not decode: %v: %w", name, err, ErrInvalid)
	}
	if err := m.check(sweep); err != nil {
		return Manifest{}, fmt.Errorf("manifest %s: %w", name, err)
	}
	return m, nil
}

func (m *Manifest) check(sweep uint64) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("field %s: %s: %w", field, fmt.Sprintf(format, args...), ErrInvalid)
	}
	switch {
	case m.Format != Format:
		return bad("format", "must be %q, got %q", Format, clip(m.Format))
	case m.Sweep != sweep:
		return bad("sweep", "is %d, the name says %d", m.Sweep, sweep)
	case m.CreatedAt <= 0:
		return bad("createdAt", "must be a positive epoch-ms time, got %d", m.CreatedAt)
	case len(m.Objects) == 0:
		return bad("objects", "a manifest lists at least one object")
	}
	total := 0
	for i := range m.Objects {
		if err := m.Objects[i].check(sweep, fmt.Sprintf("objects[%d]", i)); err != nil {
			return err
		}
		total += len(m.Objects[i].Records)
	}
	if total > MaxSweepRecords {
		return bad("objects", "hold %d records, over the limit of %d", total, MaxSweepRecords)
	}
	return nil
}

// ReadObject reads object o of a manifest, checks its size and digest
// against the manifest, and calls fn with each record's history. Errors
// match ErrNotFound, ErrInvalid or ErrTooLarge, or are fn's.
func ReadObject(ctx context.Context, sink Sink, o Object, fn func(Record) error) error {
	data, err := sink.Get(ctx, o.Name)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if len(data) != o.Bytes || hex.EncodeToString(sum[:]) != o.SHA256 {
		return fmt.Errorf("object %s is not what its manifest lists (%d bytes, sha256 %s): %w", o.Name, o.Bytes, o.SHA256, ErrInvalid)
	}
	want := map[string]bool{}
	for _, id := range o.Records {
		want[id] = true
	}
	err = decodeObject(data, func(r Record) error {
		if !want[r.ID] {
			return fmt.Errorf("object %s holds record %s, which its manifest does not list: %w", o.Name, r.ID, ErrInvalid)
		}
		r.Function = o.Function // an object is one function's
		return fn(r)
	})
	if err != nil {
		return fmt.Errorf("object %s: %w", o.Name, err)
	}
	return nil
}

// Sweeps returns the numbers of the sweeps sink has a manifest of, in
// order.
func Sweeps(ctx context.Context, sink Sink) ([]uint64, error) {
	names, err := sink.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, n := range names {
		var s uint64
		if strings.HasSuffix(n, ".manifest.json") {
			if _, err := fmt.Sscanf(n, "sweep-%012d.manifest.json", &s); err == nil {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// check checks the manifest's object f of sweep: its name, digest, size
// and record ids.
func (o *Object) check(sweep uint64, f string) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("field %s: %s: %w", field, fmt.Sprintf(format, args...), ErrInvalid)
	}
	if o.Name != ObjectName(sweep, o.Function) {
		return bad(f+".name", "%q is not the name of sweep %d's object of %s", clip(o.Name), sweep, o.Function.ProcessorName+"."+o.Function.Name)
	}
	if len(o.SHA256) != 64 || strings.Trim(o.SHA256, "0123456789abcdef") != "" {
		return bad(f+".sha256", "must be 64 lower-case hex digits")
	}
	if len(o.Records) == 0 || o.Streams < len(o.Records) || !bounds.Within(o.Bytes, 1, MaxObjectBytes) {
		return bad(f, "holds %d records in %d streams of %d bytes: each record has a stream, an object 1 to %d bytes", len(o.Records), o.Streams, o.Bytes, MaxObjectBytes)
	}
	for j, id := range o.Records {
		if err := eventstore.ValidateID(fmt.Sprintf("%s.records[%d]", f, j), id); err != nil {
			return fmt.Errorf("%v: %w", err, ErrInvalid)
		}
	}
	return nil
}
