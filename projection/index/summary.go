package index

import (
	"cmp"
	"slices"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// summaryKey is a FailureGroup's names.
type summaryKey struct{ ctx, proc, fn, code uint32 }

// Summary summarises the records that match f (every record for the zero
// Filter). It reads the index's counts, so its cost grows with the number
// of distinct (function, error code, fingerprint) groups and of cells, not
// with the number of records, at the index's clock's now (see Count) for
// any filter of: at most one of aggregate context, aggregate type and
// function kind; any names of the groups; any status, recoverability and
// view; or, instead of all those, one bound (executeAt, nextRetryAt or
// minRetries). The oldest and newest failure of a group are then found by
// reading its unfinished records in executeAt order from each end until
// one matches (unless the filter selects by executeAt alone): a few reads
// per group for a filter that selects a part of them. With a record, event
// or aggregate id it reads the records that have it; any other filter
// reads every record. An invalid view is an error matching
// ErrInvalidQuery. Safe for concurrent use.
func (ix *Index) Summary(f api.Filter) (api.Summary, error) {
	if err := CheckFilter(f); err != nil {
		return api.Summary{}, err
	}
	f, atNow := ix.rlockAt(f)
	defer ix.mu.RUnlock()
	m := ix.compile(f)
	switch p, sh := m.plan(summaryQuery, atNow); p {
	case viaNothing:
		return api.Summary{Views: map[aggregate.View]int{}}, nil
	case viaCounts:
		return ix.summaryByCounts(&m, &sh), nil
	default:
		return ix.summarize(&m, func(yield func(*entry)) { ix.each(&m, p, yield) }), nil
	}
}

// summarize summarises the entries each yields, which match m. The caller
// holds the read lock.
func (ix *Index) summarize(m *matcher, each func(yield func(*entry))) api.Summary {
	groups := map[summaryKey]*api.FailureGroup{}
	type sr struct{ s, r uint8 }
	statuses := map[sr]int{}
	sum := api.Summary{Views: map[aggregate.View]int{}}
	each(func(e *entry) {
		sum.Total++
		statuses[sr{e.status, e.recover}]++
		s := e.predicateState()
		for _, v := range aggregate.Views {
			if v.Contains(&s, m.now) {
				sum.Views[v]++
			}
		}
		k := summaryKey{e.fnContext, e.fnProcessor, e.fnName, e.errorCode}
		g := groups[k]
		if g == nil {
			g = ix.failureGroup(k)
			groups[k] = g
		}
		addTo(g, &s)
	})
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	for k, n := range statuses {
		sum.ByStatus = append(sum.ByStatus, api.StatusCount{Status: enumValue(aggregate.Statuses, k.s), Recoverable: enumValue(aggregate.Recoverabilities, k.r), Count: n})
	}
	sortSummary(&sum)
	return sum
}

// failureGroup returns an empty FailureGroup of names k.
func (ix *Index) failureGroup(k summaryKey) *api.FailureGroup {
	return &api.FailureGroup{FunctionContext: ix.names.name(k.ctx), Processor: ix.names.name(k.proc),
		Function: ix.names.name(k.fn), ErrorCode: ix.names.name(k.code)}
}

// summaryByCounts answers Summary from the counts, for a filter of shape
// sh that countable takes: per group, its part of the selection (from its
// cells, side counts or, for a bound, its classes) and its oldest and
// newest unfinished failure; over all, the counts per status and view
// from the selected records per cell. The caller holds the read lock.
func (ix *Index) summaryByCounts(m *matcher, sh *shape) api.Summary {
	sum := api.Summary{Views: map[aggregate.View]int{}}
	cs := &ix.counts
	var inCell [numCells]int // the selected records per cell
	if sh.bound != boundNone {
		for ci := range cs.cells {
			if cs.all[ci] != 0 {
				inCell[ci] = cs.cells[ci].count(m)
			}
		}
	}
	groups := map[summaryKey]*api.FailureGroup{}
	for _, g := range cs.list {
		if !m.group.covers(g.key) {
			continue
		}
		part, open := g.part(m, sh, &inCell)
		if part.Total == 0 {
			continue
		}
		if open > 0 {
			oldest, newest := ix.openBounds(g, m, &sh.mask, sh.every, sh.sides == 0 && (sh.bound == boundNone || sh.bound == boundExecuteAt))
			widen(&part, oldest, newest)
		}
		sum.Total += part.Total
		sk := summaryKey{g.key.ctx, g.key.proc, g.key.fn, g.key.code}
		fg := groups[sk]
		if fg == nil {
			fg = ix.failureGroup(sk)
			groups[sk] = fg
		}
		fg.Total += part.Total
		fg.Retryable += part.Retryable
		fg.Exhausted += part.Exhausted
		fg.Prepared += part.Prepared
		if open > 0 {
			widen(fg, part.OldestFailureAt, part.NewestFailureAt)
		}
	}
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	byCells(&sum, &inCell)
	sortSummary(&sum)
	return sum
}

// part returns g's part of the selection of m (shape sh) and how many of
// it are unfinished, adding to inCell the selected records of each cell
// (but for a bound, which summaryByCounts counts per cell itself).
func (g *group) part(m *matcher, sh *shape, inCell *[numCells]int) (part api.FailureGroup, open int) {
	if sh.bound != boundNone {
		var in [numClasses]int
		for c := range in {
			in[c] = g.classes[c].count(m)
		}
		part.Total = in[classDone] + in[classRetryable] + in[classExhausted]
		part.Retryable, part.Exhausted, part.Prepared = in[classRetryable], in[classExhausted], in[classPrepared]
		return part, in[classRetryable] + in[classExhausted]
	}
	add := func(ci uint8, n int) {
		k := &kinds[ci]
		inCell[ci] += n
		part.Total += n
		part.Retryable += n * b2i(k.retryable)
		part.Exhausted += n * b2i(k.exhausted)
		part.Prepared += n * b2i(k.prepared)
		open += n * b2i(!k.finished)
	}
	if sh.sides == 1 {
		if sc := g.sides[sh.side][sh.value]; sc != nil {
			for ci, c := range sc.cells() {
				if sh.mask[ci] {
					add(ci, int(c))
				}
			}
		}
		return part, open
	}
	for ci, n := range g.n {
		if n != 0 && sh.mask[ci] {
			add(uint8(ci), int(n))
		}
	}
	return part, open
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// byCells fills sum's counts per status and per view from the selected
// records per cell.
func byCells(sum *api.Summary, inCell *[numCells]int) {
	var statuses [4][4]int
	for ci, n := range inCell {
		if n == 0 {
			continue
		}
		k := &kinds[ci]
		statuses[k.status][k.recover] += n
		for vi := range aggregate.Views {
			if k.in[vi] {
				sum.Views[aggregate.Views[vi]] += n
			}
		}
	}
	for st := range statuses {
		for rc, n := range statuses[st] {
			if n > 0 {
				sum.ByStatus = append(sum.ByStatus, api.StatusCount{Status: enumValue(aggregate.Statuses, uint8(st)),
					Recoverable: enumValue(aggregate.Recoverabilities, uint8(rc)), Count: n})
			}
		}
	}
}

// openBounds returns the smallest and largest executeAt of g's unfinished
// records that match m, of which there is at least one, among the cells of
// mask (every: all cells). With byCell (the filter selects by nothing but
// names, cells and executeAt) they are those the group keeps per cell (lo,
// hi), or, with an executeAt range, the ends of the range in its
// unfinished summary classes. Otherwise g.byExec is read from each end
// until a record matches: what it holds of a record answers aggregate
// context, aggregate type, function kind, nextRetryAt and retries without
// reading the entry, which is read only for a status, recoverability or
// view. That reads a few records per group for a filter that selects a
// part of them independently of executeAt, and up to all of them for one
// that selects by nextRetryAt, which follows executeAt. The caller holds
// the read lock.
func (ix *Index) openBounds(g *group, m *matcher, mask *cellMask, every, byCell bool) (oldest, newest int64) {
	if !byCell {
		return ix.openBoundsByScan(g, m, every)
	}
	var sp span
	if m.execBound {
		execSpan(g, m, &sp)
		return sp.oldest, sp.newest
	}
	for ci, n := range g.n {
		if n != 0 && mask[ci] && !kinds[ci].finished {
			sp.take(g.lo[ci], g.hi[ci])
		}
	}
	return sp.oldest, sp.newest
}

// openBoundsByScan finds the oldest and newest unfinished records of g
// that m selects by walking g's records in executeAt order from each end.
func (ix *Index) openBoundsByScan(g *group, m *matcher, every bool) (oldest, newest int64) {
	matches := func(r openRec) bool {
		return m.quick(&r) && (every && m.f.MinRetries <= 255 && m.f.IDPrefix == "" || m.match(ix.slots.at(r.slot)))
	}
	g.byExec.Each(func(r openRec) bool {
		if matches(r) {
			oldest = r.at
			return false
		}
		return true
	})
	g.byExec.EachDesc(func(r openRec) bool {
		if matches(r) {
			newest = r.at
			return false
		}
		return true
	})
	return oldest, newest
}

// span is the oldest and newest of the times taken.
type span struct {
	oldest, newest int64
	found          bool
}

// take widens s to lo and hi.
func (s *span) take(lo, hi int64) {
	if !s.found || lo < s.oldest {
		s.oldest = lo
	}
	if !s.found || hi > s.newest {
		s.newest = hi
	}
	s.found = true
}

// execSpan takes into sp, for a filter that selects by executeAt alone,
// the ends of its range in g's unfinished summary classes.
func execSpan(g *group, m *matcher, sp *span) {
	hasTo := !m.f.ExecuteAtTo.IsZero()
	for _, c := range []int{classRetryable, classExhausted} {
		set := &g.classes[c].exec
		if set.Len() == 0 {
			continue
		}
		lo, okLo := set.Ceil(m.from)
		hi, okHi := set.Last(), true
		if hasTo {
			hi, okHi = set.Lower(m.to)
		}
		if okLo && okHi && lo <= hi && (!hasTo || lo < m.to) && hi >= m.from {
			sp.take(lo, hi)
		}
	}
}

// quick reports whether what r holds of a record passes the filter's
// aggregate context, aggregate type, function kind, bounds and (up to 255)
// minRetries.
func (m *matcher) quick(r *openRec) bool {
	return m.sidesMatch([numSides]uint32{r.aggContext, r.aggType, uint32(r.kind)}) &&
		(!m.execBound || inBounds(r.at, m.from, m.to, !m.f.ExecuteAtTo.IsZero())) &&
		(!m.nextBound || inBounds(r.nextRetryAt, m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero())) &&
		int32(r.retries) >= min(m.f.MinRetries, 255)
}

// widen extends g's failure times to oldest and newest as addTo does.
func widen(g *api.FailureGroup, oldest, newest int64) {
	if g.OldestFailureAt == 0 || oldest < g.OldestFailureAt {
		g.OldestFailureAt = oldest
	}
	g.NewestFailureAt = max(g.NewestFailureAt, newest)
}

// sortSummary puts the groups and status counts in their order: the
// largest group first, statuses by name.
func sortSummary(sum *api.Summary) {
	// Each comparison is made only when the ones before tie (cmp.Or's
	// arguments would all be computed).
	slices.SortFunc(sum.Groups, func(a, b api.FailureGroup) int {
		switch {
		case a.Total != b.Total:
			return cmp.Compare(b.Total, a.Total)
		case a.FunctionContext != b.FunctionContext:
			return cmp.Compare(a.FunctionContext, b.FunctionContext)
		case a.Processor != b.Processor:
			return cmp.Compare(a.Processor, b.Processor)
		case a.Function != b.Function:
			return cmp.Compare(a.Function, b.Function)
		}
		return cmp.Compare(a.ErrorCode, b.ErrorCode)
	})
	slices.SortFunc(sum.ByStatus, func(a, b api.StatusCount) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.Recoverable, b.Recoverable))
	})
}

// addTo counts record s in g.
func addTo(g *api.FailureGroup, s *aggregate.State) {
	g.Total++
	if s.IsRetryable() {
		g.Retryable++
	}
	if s.Status == aggregate.StatusSucceeded {
		return
	}
	if !s.IsBelowRetryThreshold() {
		g.Exhausted++
	}
	if s.Status == aggregate.StatusPrepared {
		g.Prepared++
	}
	if g.OldestFailureAt == 0 || s.ExecuteAt < g.OldestFailureAt {
		g.OldestFailureAt = s.ExecuteAt
	}
	g.NewestFailureAt = max(g.NewestFailureAt, s.ExecuteAt)
}
