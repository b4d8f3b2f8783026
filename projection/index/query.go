package index

import (
	"cmp"
	"slices"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
)

// CheckFilter reports whether the index can answer for f (its view is
// one it knows), as List, Count and Summary check it: an error matching
// ErrInvalidQuery that names the field, or nil. It lets a caller that
// asks several indexes refuse a bad filter before it asks any.
func CheckFilter(f api.Filter) error {
	if f.View != "" {
		if _, err := aggregate.ParseView(string(f.View)); err != nil {
			return invalidQuery("view", "%v", err)
		}
	}
	return nil
}

// List returns a page of the records that match q.Filter in q.Sort order.
// It reads O(log n + the records it skips and returns) entries: a filter
// that matches one record in k costs k entries per returned record; a
// filter with a record, event or aggregate id reads only the records that
// have it. An
// invalid sort, limit, view or cursor is an error matching ErrInvalidQuery.
// Safe for concurrent use.
func (ix *Index) List(q api.Query) (api.Page, error) {
	field, err := fieldOf(q.Sort)
	if err != nil {
		return api.Page{}, err
	}
	if err := CheckFilter(q.Filter); err != nil {
		return api.Page{}, err
	}
	limit, hash, after, err := pageOf(q)
	if err != nil {
		return api.Page{}, err
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m := ix.compile(q.Filter)
	page := api.Page{Items: []api.Item{}}
	var last pos
	visit := func(p pos) bool {
		if after != nil && p.same(after.key, after.tie) {
			return true
		}
		e := ix.slots.at(p.slot)
		if !m.match(e) {
			return true
		}
		if len(page.Items) == limit {
			page.Next = cursor{query: hash, key: last.key, tie: last.tie}.String()
			return false
		}
		page.Items = append(page.Items, e.item(ix.names))
		last = p
		return true
	}
	if m.byLookup() {
		// A few records at most: look them up instead of scanning.
		ix.visitLookedUp(&m, field, q.Sort.Desc, after, visit)
		return page, nil
	}
	t := &ix.orders[field]
	switch {
	case q.Sort.Desc && after != nil:
		t.Before(highest(after.key, after.tie), true, visit)
	case q.Sort.Desc:
		t.EachDesc(visit)
	case after != nil:
		t.From(lowest(after.key, after.tie), visit)
	default:
		t.Each(visit)
	}
	return page, nil
}

// beforePos reports whether the cursor's point sorts before p.
func (c *cursor) beforePos(p pos) bool {
	return c.key < p.key || c.key == p.key && c.tie < p.tie
}

// Count returns the number of records that match f. It reads the
// index's counts, at a cost that grows with the number of distinct
// (function, error code, fingerprint) groups and of cells (status,
// recoverability, retries below the maximum, time situation) and not with
// the number of records, for any filter of: at most one of aggregate
// context, aggregate type and function kind; at most one bound (executeAt,
// nextRetryAt or minRetries) and then no aggregate context, aggregate type
// or function kind; any names of the groups (function context, processor,
// function, error code, fingerprint), though with a bound only without
// status, recoverability or view; and any status, recoverability and view.
// A view that depends on time (to-retry, executing, next-retry) is counted
// so at the index's clock's now or an earlier Now no further back than the
// latest now the index has answered for. With a record, event or
// aggregate id it reads the records that have it; any other filter reads
// every record. An invalid view is an error matching ErrInvalidQuery. Safe
// for concurrent use.
func (ix *Index) Count(f api.Filter) (int, error) {
	if err := CheckFilter(f); err != nil {
		return 0, err
	}
	if f == (api.Filter{}) {
		return ix.Len(), nil
	}
	f, atNow := ix.rlockAt(f)
	defer ix.mu.RUnlock()
	m := ix.compile(f)
	switch p, sh := m.plan(countQuery, atNow); p {
	case viaNothing:
		return 0, nil
	case viaCounts:
		return ix.countByCounts(&m, &sh), nil
	default:
		n := 0
		ix.each(&m, p, func(*entry) { n++ })
		return n, nil
	}
}

// pageOf reads a list query's page: its limit (the default for 0), the
// hash of its filter and sort, and the cursor to continue after.
func pageOf(q api.Query) (limit int, hash uint64, after *cursor, err error) {
	limit = cmp.Or(q.Limit, api.DefaultLimit)
	if !bounds.Within(limit, 1, api.MaxLimit) {
		return 0, 0, nil, invalidQuery("limit", "limit must be between 1 and %d, got %d", api.MaxLimit, limit)
	}
	hash = queryHash(q.Filter, q.Sort)
	if q.Cursor != "" {
		c, err := parseCursor(q.Cursor, hash)
		if err != nil {
			return 0, 0, nil, err
		}
		after = &c
	}
	return limit, hash, after, nil
}

// visitLookedUp visits the records m looks up, in the sort's order, from
// after the cursor, until visit returns false.
func (ix *Index) visitLookedUp(m *matcher, field sortField, desc bool, after *cursor, visit func(pos) bool) {
	var ps []pos
	ix.lookup(m, func(slot uint32, e *entry) {
		ps = append(ps, pos{field.key(e), tieOf(e.id), slot})
	})
	slices.SortFunc(ps, func(a, b pos) int { return cmpPos(a, b) })
	if desc {
		slices.Reverse(ps)
	}
	for _, p := range ps {
		if after != nil && (!desc && !after.beforePos(p) || desc && !p.before(after.key, after.tie)) {
			continue
		}
		if !visit(p) {
			break
		}
	}
}
