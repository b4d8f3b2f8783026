package projection

import "cmp"

// pair is an instant, the slot of the record it belongs to and a tag that
// sorts before both: a group's unfinished records by cell then executeAt,
// the instants at which records change cells.
type pair struct {
	at   int64
	slot uint32
	tag  uint8
}

// openRec is an unfinished record of a group by executeAt, with what the
// oldest and newest failure of a selection by aggregate context, aggregate
// type, function kind, nextRetryAt or retries read of it: those are
// checked without reading the entry.
type openRec struct {
	at, nextRetryAt     int64
	slot                uint32
	aggContext, aggType uint32
	kind, retries       uint8 // retries capped at 255
}

func newOpenRec(e *entry, slot uint32) openRec {
	return openRec{at: e.executeAt, nextRetryAt: e.nextRetryAt, slot: slot, aggContext: e.aggContext, aggType: e.aggType,
		kind: e.kind, retries: uint8(min(max(e.retries, 0), 255))}
}

func cmpOpenRec(a, b openRec) int {
	if a.at != b.at {
		return cmp.Compare(a.at, b.at)
	}
	return cmp.Compare(a.slot, b.slot)
}

func cmpPair(a, b pair) int {
	switch {
	case a.tag != b.tag:
		return int(a.tag) - int(b.tag)
	case a.at < b.at:
		return -1
	case a.at > b.at:
		return 1
	case a.slot < b.slot:
		return -1
	case a.slot > b.slot:
		return 1
	}
	return 0
}
