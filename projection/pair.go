package projection

// pair is an instant, the slot of the record it belongs to and a tag that
// sorts before both: a group's unfinished records by cell then executeAt,
// the instants at which records change cells.
type pair struct {
	at   int64
	slot uint32
	tag  uint8
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
