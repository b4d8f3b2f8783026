package index

// interner maps the few distinct values of repeated names (contexts,
// processors, functions, aggregate types, error codes) to small numbers, so
// an index entry holds 4 bytes per name instead of a string. Id 0 is "".
// It only grows: the set of names is small and stable in practice. Not safe
// for concurrent use; the Index's lock guards it.
type interner struct {
	ids   map[string]uint32
	names []string
}

func newInterner() *interner {
	return &interner{ids: map[string]uint32{"": 0}, names: []string{""}}
}

// add adds s, which is new, and returns its id.
func (in *interner) add(s string) uint32 {
	id := uint32(len(in.names))
	s = string([]byte(s)) // own the bytes: s may point into a large decoded value
	in.ids[s] = id
	in.names = append(in.names, s)
	return id
}

// intern returns the id of name s, adding it if it is new: a name
// already held costs no allocation.
func intern[S text](in *interner, s S) uint32 {
	if id, ok := in.ids[string(s)]; ok {
		return id
	}
	return in.add(string(s))
}

// lookup returns s's id; ok is false if s was never interned, so no entry
// can hold it.
func (in *interner) lookup(s string) (uint32, bool) {
	id, ok := in.ids[s]
	return id, ok
}

// name returns the string of id.
func (in *interner) name(id uint32) string { return in.names[id] }
