package index

// arena stores entries in fixed-size pages, so growing never copies the
// entries or leaves half of a doubled slice unused, and a slot number
// stays valid until it is freed. Freed slots are reused.
type arena struct {
	pages [][]entry
	n     uint32
	freed []uint32
}

const pageBits = 12

func (a *arena) at(slot uint32) *entry {
	return &a.pages[slot>>pageBits][slot&(1<<pageBits-1)]
}

func (a *arena) add(e entry) uint32 {
	if k := len(a.freed); k > 0 {
		slot := a.freed[k-1]
		a.freed = a.freed[:k-1]
		*a.at(slot) = e
		return slot
	}
	slot := a.n
	if int(slot>>pageBits) == len(a.pages) {
		a.pages = append(a.pages, make([]entry, 1<<pageBits))
	}
	a.n++
	*a.at(slot) = e
	return slot
}

// len returns how many slots are in use.
func (a *arena) len() int { return int(a.n) - len(a.freed) }

func (a *arena) free(slot uint32) {
	*a.at(slot) = entry{}
	a.freed = append(a.freed, slot)
}

// each calls f for every slot in use, in slot order, until f returns false.
func (a *arena) each(f func(slot uint32, e *entry) bool) {
	for slot := uint32(0); slot < a.n; slot++ {
		e := a.at(slot)
		if e.id == "" {
			continue
		}
		if !f(slot, e) {
			return
		}
	}
}
