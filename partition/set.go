package partition

import "slices"

// Set is a set of partitions, ids read once, for the questions asked of
// every record: which of its partitions holds it. The zero Set holds
// nothing. A Set is a value; its methods do not change it.
type Set struct {
	ids []string
	of  map[string]*[Slots]string // processor -> the partition holding each slot
}

// NewSet returns the set of the partitions ids, sorted; an id that is no
// partition's (CheckID) is left out.
func NewSet(ids []string) Set {
	s := Set{of: map[string]*[Slots]string{}}
	for _, id := range ids {
		proc, slots, err := SlotsOfID(id)
		if err != nil {
			continue
		}
		s.ids = append(s.ids, id)
		if s.of[proc] == nil {
			s.of[proc] = new([Slots]string)
		}
		for _, slot := range slots {
			s.of[proc][slot] = id
		}
	}
	slices.Sort(s.ids)
	return s
}

// IDs returns the set's partitions, sorted; the caller must not change
// them.
func (s Set) IDs() []string { return s.ids }

// Of returns the partition of the set that holds the record of processor
// with id recordID, if one does.
func (s Set) Of(processor, recordID string) (string, bool) {
	slots := s.of[processor]
	if slots == nil {
		return "", false
	}
	id := slots[Slot(recordID)]
	return id, id != ""
}

// Lead returns the partition of the set that holds processor's slot 0, if
// one does: the processor itself, or the first of its parts. The work
// kept per processor rather than per record (its recovery drain, its
// release after a deploy) is that partition's holder's.
func (s Set) Lead(processor string) (string, bool) {
	slots := s.of[processor]
	if slots == nil || slots[0] == "" {
		return "", false
	}
	return slots[0], true
}
