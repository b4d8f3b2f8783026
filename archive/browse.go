package archive

import (
	"context"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// ListSweeps returns a summary of every sweep sink holds, in order, read
// from its manifest: the CLI's archive list and the API's GET
// /api/v1/archive show it. A manifest that cannot be read is listed with
// its Error (the counts are then 0); the error returned is the sink's,
// when it cannot list. Safe for concurrent use as the sink is.
func ListSweeps(ctx context.Context, sink Sink) ([]api.ArchiveSweep, error) {
	sweeps, err := Sweeps(ctx, sink)
	if err != nil {
		return nil, err
	}
	out := make([]api.ArchiveSweep, 0, len(sweeps))
	for _, n := range sweeps {
		s := api.ArchiveSweep{Sweep: n}
		m, err := ReadManifest(ctx, sink, n)
		if err != nil {
			s.Error = err.Error()
		}
		s.CreatedAt, s.Objects = m.CreatedAt, len(m.Objects)
		for _, o := range m.Objects {
			s.Records, s.Streams, s.Bytes = s.Records+len(o.Records), s.Streams+o.Streams, s.Bytes+o.Bytes
		}
		out = append(out, s)
	}
	return out, nil
}

// Summarize returns r's summary as a listing shows it (its function, how
// many versions its history has, and the status and time of its last
// state), r being read from object o.
func Summarize(o Object, r Record) api.ArchivedRecord {
	s := api.ArchivedRecord{ID: r.ID, Function: r.Function, Versions: len(r.Streams), Object: o.Name}
	if len(r.Streams) > 0 {
		if st, ok := aggregate.CarriedState(r.Streams[len(r.Streams)-1]); ok {
			s.Status, s.ExecuteAt = st.Status, st.ExecuteAt
		}
	}
	return s
}

// Each calls fn with every record of sweep's objects, in the manifest's
// order (only those of ids, when ids is not empty), and returns how many
// it called fn with. It stops at fn's first error and returns it; a
// manifest or an object that does not read or verify is an error wrapping
// ErrInvalid, ErrNotFound or ErrTooLarge, or the sink's error.
func Each(ctx context.Context, sink Sink, sweep uint64, ids map[string]bool, fn func(o Object, r Record) error) (int, error) {
	m, err := ReadManifest(ctx, sink, sweep)
	if err != nil {
		return 0, err
	}
	found := 0
	for _, o := range m.Objects {
		err := ReadObject(ctx, sink, o, func(r Record) error {
			if len(ids) > 0 && !ids[r.ID] {
				return nil
			}
			found++
			return fn(o, r)
		})
		if err != nil {
			return found, err
		}
	}
	return found, nil
}
