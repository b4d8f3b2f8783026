package projection

import (
	"cmp"
	"slices"
	"unicode/utf8"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// FingerprintGroup is the records of one failure fingerprint (the API's
// type).
type FingerprintGroup = api.FingerprintGroup

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
	if len(msg) > api.MaxSampleBytes {
		i := api.MaxSampleBytes
		for i > 0 && !utf8.RuneStart(msg[i]) {
			i--
		}
		msg = msg[:i]
	}
	return string([]byte(msg))
}

// FingerprintSummary groups the records that match f by fingerprint: per
// fingerprint its function and code, a sample message, the first and last
// executeAt and the count per status, the largest group first. Records
// without a fingerprint are left out. An invalid view is an error matching
// ErrInvalidQuery. It reads every entry. Safe for concurrent use.
func (ix *Index) FingerprintSummary(f Filter) ([]FingerprintGroup, error) {
	if err := validate(f); err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m := ix.compile(f)
	groups := map[uint32]*FingerprintGroup{}
	ix.slots.each(func(_ uint32, e *entry) bool {
		if e.fingerprint == 0 || !m.match(e) {
			return true
		}
		g := groups[e.fingerprint]
		if g == nil {
			g = &FingerprintGroup{Fingerprint: ix.names.name(e.fingerprint), FunctionContext: ix.names.name(e.fnContext),
				Processor: ix.names.name(e.fnProcessor), Function: ix.names.name(e.fnName), ErrorCode: ix.names.name(e.errorCode),
				SampleMessage: ix.samples[e.fingerprint], FirstSeen: e.executeAt, LastSeen: e.executeAt, ByStatus: map[aggregate.Status]int{}}
			groups[e.fingerprint] = g
		}
		g.Total++
		g.ByStatus[enumValue(aggregate.Statuses, e.status)]++
		g.FirstSeen, g.LastSeen = min(g.FirstSeen, e.executeAt), max(g.LastSeen, e.executeAt)
		return true
	})
	out := make([]FingerprintGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b FingerprintGroup) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	return out, nil
}
