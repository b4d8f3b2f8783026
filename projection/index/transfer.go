package index

import "fmt"

// PutFrom puts every record src holds into b's index, as Put puts a view
// (a record b's index holds at a higher version keeps it, unless the load
// replaces), and returns how many it put: how a source adds the records of
// a snapshot it checked in an index of their own (a partition's) to an
// index that holds others. src is not changed; it takes src's read lock
// within b's Update, so src must be an index no Update of b's waits on.
// A src being loaded in bulk is ErrLoading; src being b's own index is an
// error.
func (b *Batch) PutFrom(src *Index) (int, error) {
	ix := b.ix
	if src == ix {
		return 0, fmt.Errorf("index: PutFrom of the index itself: %w", ErrInvalidOption)
	}
	src.mu.RLock()
	defer src.mu.RUnlock()
	if src.loading != nil {
		return 0, ErrLoading
	}
	names := make([]uint32, len(src.names.names)) // src's name numbers to ix's
	for i, n := range src.names.names {
		names[i] = intern(ix.names, n)
	}
	n := 0
	src.slots.each(func(_ uint32, e *entry) bool {
		c := *e
		for _, f := range [...]*uint32{&c.aggContext, &c.aggType, &c.fnContext, &c.fnProcessor, &c.fnName, &c.errorCode, &c.fingerprint} {
			*f = names[*f]
		}
		fp := e.fingerprint
		ix.putEntry(c, func() string { return src.samples[fp] })
		n++
		return true
	})
	return n, nil
}
