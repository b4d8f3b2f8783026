package index

import (
	"cmp"
	"slices"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	internaltext "github.com/amends-dev/amends/internal/text"
)

// keepSample remembers a message of e's fingerprint, the first the index
// sees; msg returns the message. The caller holds the write lock.
func (ix *Index) keepSample(e *entry, msg func() string) {
	if e.fingerprint == 0 {
		return
	}
	if ix.samples == nil {
		ix.samples = map[uint32]string{}
	}
	if _, ok := ix.samples[e.fingerprint]; ok {
		return
	}
	ix.samples[e.fingerprint] = sample(msg())
}

// sample cuts msg to api.MaxSampleBytes, not splitting a UTF-8 sequence,
// and owns its bytes.
func sample(msg string) string {
	return string([]byte(internaltext.Cut(msg, api.MaxSampleBytes)))
}

// FingerprintSummary groups the records that match f by fingerprint: per
// fingerprint its function and code, a sample message, the first and last
// executeAt and the count per status, the largest group first. Records
// without a fingerprint are left out. For a filter of names of the groups
// only (function context, processor, function, error code, fingerprint)
// it reads the index's counts, at a cost that grows with the number of
// groups, not of records; any other filter reads every entry. An invalid
// view is an error matching ErrInvalidQuery. Safe for concurrent use.
func (ix *Index) FingerprintSummary(f api.Filter) ([]api.FingerprintGroup, error) {
	if err := CheckFilter(f); err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m := ix.compile(f)
	switch p, _ := m.plan(fingerprintQuery, false); p {
	case viaNothing:
		return sortFingerprints(nil), nil
	case viaCounts:
		return ix.fingerprintCounts(&m), nil
	default:
		return sortFingerprints(ix.fingerprints(&m, p)), nil
	}
}

// fingerprintScan is FingerprintSummary by reading every entry. The caller
// holds the read lock.
func (ix *Index) fingerprintScan(m *matcher) map[uint32]*api.FingerprintGroup {
	return ix.fingerprints(m, viaScan)
}

// fingerprints groups the records of m that p finds (viaLookup or
// viaScan) by fingerprint. The caller holds the read lock.
func (ix *Index) fingerprints(m *matcher, p path) map[uint32]*api.FingerprintGroup {
	groups := map[uint32]*api.FingerprintGroup{}
	ix.each(m, p, func(e *entry) {
		if e.fingerprint == 0 {
			return
		}
		g := groups[e.fingerprint]
		if g == nil {
			g = &api.FingerprintGroup{Fingerprint: ix.names.name(e.fingerprint), FunctionContext: ix.names.name(e.fnContext),
				Processor: ix.names.name(e.fnProcessor), Function: ix.names.name(e.fnName), ErrorCode: ix.names.name(e.errorCode),
				SampleMessage: ix.samples[e.fingerprint], FirstSeen: e.executeAt, LastSeen: e.executeAt, ByStatus: map[aggregate.Status]int{}}
			groups[e.fingerprint] = g
		}
		g.Total++
		g.ByStatus[enumValue(aggregate.Statuses, e.status)]++
		g.FirstSeen, g.LastSeen = min(g.FirstSeen, e.executeAt), max(g.LastSeen, e.executeAt)
	})
	return groups
}

// fingerprintCounts is FingerprintSummary from the groups' counts, for a
// filter of group names only. A fingerprint's names are those of its first
// group. The caller holds the read lock.
func (ix *Index) fingerprintCounts(m *matcher) []api.FingerprintGroup {
	groups := map[uint32]*api.FingerprintGroup{}
	for _, g := range ix.counts.list {
		if g.key.fp == 0 || g.total == 0 || !m.group.covers(g.key) {
			continue
		}
		fg := groups[g.key.fp]
		first, last := int64(0), int64(0)
		seen := false
		for _, c := range []int{classDone, classRetryable, classExhausted} {
			if set := &g.classes[c].exec; set.Len() > 0 {
				if !seen || set.First() < first {
					first = set.First()
				}
				if !seen || set.Last() > last {
					last = set.Last()
				}
				seen = true
			}
		}
		if fg == nil {
			fg = &api.FingerprintGroup{Fingerprint: ix.names.name(g.key.fp), FunctionContext: ix.names.name(g.key.ctx),
				Processor: ix.names.name(g.key.proc), Function: ix.names.name(g.key.fn), ErrorCode: ix.names.name(g.key.code),
				SampleMessage: ix.samples[g.key.fp], FirstSeen: first, LastSeen: last, ByStatus: map[aggregate.Status]int{}}
			groups[g.key.fp] = fg
		}
		fg.Total += g.total
		fg.FirstSeen, fg.LastSeen = min(fg.FirstSeen, first), max(fg.LastSeen, last)
		for ci, n := range g.n {
			if n != 0 {
				fg.ByStatus[enumValue(aggregate.Statuses, kinds[ci].status)] += int(n)
			}
		}
	}
	return sortFingerprints(groups)
}

// sortFingerprints lists groups, the largest first.
func sortFingerprints(groups map[uint32]*api.FingerprintGroup) []api.FingerprintGroup {
	out := make([]api.FingerprintGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, cmpFingerprints)
	return out
}

// cmpFingerprints orders fingerprint groups: the largest first, then by
// fingerprint.
func cmpFingerprints(a, b api.FingerprintGroup) int {
	if a.Total != b.Total {
		return cmp.Compare(b.Total, a.Total)
	}
	return cmp.Compare(a.Fingerprint, b.Fingerprint)
}
