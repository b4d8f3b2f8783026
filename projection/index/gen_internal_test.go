package index

import (
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection/index/indextest"
)

// The generators of package indextest, under their old names.
const base = indextest.Base

var (
	randomView   = indextest.RandomView
	randomViews  = indextest.RandomViews
	randomTime   = indextest.RandomTime
	randomFilter = indextest.RandomFilter
)

// memIndex returns an index filled with views, without a bucket.
func memIndex(now time.Time, views []api.View) *Index {
	ix, err := New(WithClock(aggregate.ClockFunc(func() time.Time { return now })))
	if err != nil {
		panic(err)
	}
	ix.mu.Lock()
	for i := range views {
		ix.put(&views[i])
	}
	ix.mu.Unlock()
	return ix
}

// entryOf is the entry of v.
func entryOf(v *api.View, in *interner) entry {
	f := fieldsOf(v)
	return newEntry(&f, in)
}

// beginLoad begins a load that does not replace, as a first watch does.
func (ix *Index) beginLoad() { (&Batch{ix}).BeginLoad(false) }
