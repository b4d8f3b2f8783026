package partition

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Slots is how many slots a processor's records are hashed into: the most
// parts a processor can be split into.
const Slots = 256

// MaxInstances is the most instances a plan places partitions on: with
// more, a processor split into Slots parts could still have parts larger
// than a quarter of an instance's share.
const MaxInstances = Slots / 4

// ErrInvalid: Compute's input cannot be planned (no instance, too many,
// an empty or repeated name). The error names the value.
var ErrInvalid = errors.New("invalid partition input")

// Slot returns the slot of record id: FNV-1a of the id, modulo Slots. A
// record's slot never changes.
func Slot(recordID string) int {
	h := uint32(2166136261) // FNV-1a, 32 bits, without an allocation per call
	for i := 0; i < len(recordID); i++ {
		h ^= uint32(recordID[i])
		h *= 16777619
	}
	return int(h % Slots)
}

// Plan is where every partition is: how many parts each split processor
// has, and the instance that holds each partition. The zero Plan places
// nothing. A Plan is a value; its methods do not change it.
type Plan struct {
	// Splits is the number of parts of each split processor, a power of
	// two from 2 to Slots; a processor not in it is one partition.
	Splits map[string]int `json:"splits,omitempty"`
	// Owners is the instance that holds each partition, by partition id
	// (ID).
	Owners map[string]string `json:"owners"`
}

// ID names part i of n of processor's records: the processor's name when
// n is 1, else "<processor>/<i>/<n>". An id says which slots it holds
// whatever the plan (SlotsOfID), so that two instances that act on two
// plans can tell whether their partitions overlap.
func ID(processor string, i, n int) string {
	if n <= 1 {
		return processor
	}
	return processor + "/" + strconv.Itoa(i) + "/" + strconv.Itoa(n)
}

// Parts returns how many parts processor's records are split into (1: not
// split).
func (p Plan) Parts(processor string) int { return max(p.Splits[processor], 1) }

// Of returns the id of the partition that holds the record of processor
// with id recordID.
func (p Plan) Of(processor, recordID string) string {
	n := p.Parts(processor)
	return ID(processor, Slot(recordID)%n, n)
}

// SlotsOf returns the slots of partition id if it is one of the plan's
// processors' parts (of as many parts as the plan splits it into); ok is
// false for any other id.
func (p Plan) SlotsOf(id string) (processor string, slots []int, ok bool) {
	processor, i, n, err := parseID(id)
	if err != nil || n != p.Parts(processor) {
		return "", nil, false
	}
	return processor, slotsOf(i, n), true
}

// SlotsOfID returns the processor of partition id and its slots: every
// slot for a processor's name, the slots s with s % n == i for
// "<processor>/<i>/<n>". An id ID cannot make is an error matching
// ErrInvalid.
func SlotsOfID(id string) (processor string, slots []int, err error) {
	processor, i, n, err := parseID(id)
	if err != nil {
		return "", nil, err
	}
	return processor, slotsOf(i, n), nil
}

// Overlap reports whether partitions a and b hold a record in common: they
// are of one processor and share a slot. Ids that are not partitions'
// overlap nothing.
func Overlap(a, b string) bool {
	pa, ia, na, err := parseID(a)
	if err != nil {
		return false
	}
	pb, ib, nb, err := parseID(b)
	if err != nil || pa != pb {
		return false
	}
	// The parts are residues modulo powers of two: they share a slot when
	// they agree modulo the smaller one.
	m := min(na, nb)
	return ia%m == ib%m
}

// Holds reports whether partition id holds the record of processor with
// id recordID. An id that is not a partition's holds nothing.
func Holds(id, processor, recordID string) bool {
	proc, i, n, err := parseID(id)
	return err == nil && proc == processor && Slot(recordID)%n == i
}

func slotsOf(i, n int) []int {
	slots := make([]int, 0, Slots/n)
	for s := i; s < Slots; s += n {
		slots = append(slots, s)
	}
	return slots
}

// CheckID reports whether id can name a partition: a processor's name (1
// to 256 bytes without '/'), alone or followed by "/<i>/<n>", n a power of
// two from 2 to Slots and i from 0 to n-1, in decimal. The error matches
// ErrInvalid and quotes id.
func CheckID(id string) error {
	_, _, _, err := parseID(id)
	return err
}

// parseID reads a partition id: its processor, part and parts (0 and 1
// for a whole processor).
func parseID(id string) (processor string, i, n int, err error) {
	processor, rest, split := strings.Cut(id, "/")
	if err := validProcessor(processor); err != nil {
		return "", 0, 0, fmt.Errorf("partition %.40q: %w", id, err)
	}
	if !split {
		return processor, 0, 1, nil
	}
	part, parts, ok := strings.Cut(rest, "/")
	i, ierr := strconv.Atoi(part)
	n, nerr := strconv.Atoi(parts)
	if !ok || ierr != nil || nerr != nil || n < 2 || n > Slots || n&(n-1) != 0 || i < 0 || i >= n || ID(processor, i, n) != id {
		return "", 0, 0, fmt.Errorf("partition %.40q: after the processor comes /<i>/<n>, n a power of two from 2 to %d and i from 0 to n-1: %w", id, Slots, ErrInvalid)
	}
	return processor, i, n, nil
}

// Held returns the partitions instance holds, sorted.
func (p Plan) Held(instance string) []string {
	var out []string
	for id, owner := range p.Owners {
		if owner == instance {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// MaxPartitions bounds the partitions of a plan that Validate accepts:
// what a plan read from storage may hold.
const MaxPartitions = 1 << 16

// Validate reports whether p is a plan Compute could have made: every
// split a power of two from 2 to Slots of a valid processor name, every
// partition id one of its processor's parts, each owned by a non-empty
// instance name, and every part of each processor it names placed. A
// plan read from storage is validated before it is used; the error
// matches ErrInvalid and names the partition or processor at fault.
func (p Plan) Validate() error {
	if len(p.Owners) > MaxPartitions {
		return fmt.Errorf("owners: %d partitions, over the limit of %d: %w", len(p.Owners), MaxPartitions, ErrInvalid)
	}
	for proc, n := range p.Splits {
		if err := validProcessor(proc); err != nil {
			return fmt.Errorf("splits: %w", err)
		}
		if n < 2 || n > Slots || n&(n-1) != 0 {
			return fmt.Errorf("splits: processor %q has %d parts; a split is a power of two from 2 to %d: %w", proc, n, Slots, ErrInvalid)
		}
	}
	parts := map[string]int{}
	for id, owner := range p.Owners {
		proc, _, ok := p.SlotsOf(id)
		if !ok || validProcessor(proc) != nil {
			return fmt.Errorf("owners: %q is not a partition of the plan's splits: %w", id, ErrInvalid)
		}
		if owner == "" || len(owner) > maxInstanceName {
			return fmt.Errorf("owners: partition %q has owner %.20q; an instance name is 1 to %d bytes: %w", id, owner, maxInstanceName, ErrInvalid)
		}
		parts[proc]++
	}
	for proc, n := range parts {
		if n != p.Parts(proc) {
			return fmt.Errorf("owners: %d of processor %q's %d parts are placed; a plan places all of them: %w", n, proc, p.Parts(proc), ErrInvalid)
		}
	}
	return nil
}

// maxInstanceName bounds an instance's name.
const maxInstanceName = 256

func validProcessor(proc string) error {
	if proc == "" || len(proc) > maxInstanceName || strings.ContainsRune(proc, '/') {
		return fmt.Errorf("processor name %.20q: it must be 1 to %d bytes without '/': %w", proc, maxInstanceName, ErrInvalid)
	}
	return nil
}

// piece is one partition being placed.
type piece struct {
	id     string
	size   float64
	parent string // its id in the previous plan, if its processor was split less
}

// Compute returns the plan that places the records of each processor
// (sizes: records per processor) on instances, starting from prev, the
// plan in force (the zero Plan: none). A processor is split when a part
// would be more than a quarter of an instance's share (total/instances);
// a split is never undone, so that a shrinking processor does not move
// back and forth. Each instance keeps, largest first, the partitions it
// held in prev (a part of a newly split processor counts as held by the
// holder of the part it came from) while it holds at most 1.25 times its
// share; the others go to the least loaded instance; then the most loaded
// give pieces to the least loaded until that one holds three quarters of
// its share (see place). No instance then holds more than 1.25 times its
// share or less than half of it, Compute on its own result, with the same
// sizes and instances, moves nothing, and an instance that joins takes
// partitions from the others. It returns an error matching
// ErrInvalid for no instance, more than MaxInstances, or an empty or
// repeated instance or processor name. Pure and safe for concurrent use.
func Compute(sizes map[string]uint64, instances []string, prev Plan) (Plan, error) {
	if err := validate(sizes, instances); err != nil {
		return Plan{}, err
	}
	var total float64
	for _, s := range sizes {
		total += float64(s)
	}
	share := total / float64(len(instances))
	plan := Plan{Splits: map[string]int{}, Owners: make(map[string]string, len(sizes))}
	var pieces []piece
	for _, proc := range sortedKeys(sizes) {
		size := float64(sizes[proc])
		was := prev.Parts(proc)
		n := max(was, parts(size, share/4))
		if n > 1 {
			plan.Splits[proc] = n
		}
		for i := range n {
			pc := piece{id: ID(proc, i, n), size: size / float64(n)}
			if n != was {
				pc.parent = ID(proc, i%was, was)
			}
			pieces = append(pieces, pc)
		}
	}
	slices.SortFunc(pieces, func(a, b piece) int {
		return cmp.Or(cmp.Compare(b.size, a.size), strings.Compare(a.id, b.id))
	})
	place(plan.Owners, pieces, instances, prev, share)
	if len(plan.Splits) == 0 {
		plan.Splits = nil
	}
	return plan, nil
}

// parts is how many parts, a power of two up to Slots, keep each part of
// size at most limit.
func parts(size, limit float64) int {
	if limit <= 0 || size <= limit {
		return 1
	}
	need := math.Ceil(size / limit)
	if need >= Slots {
		return Slots
	}
	return 1 << bits.Len(uint(need)-1)
}

// load is what one instance is given.
type load struct {
	records float64
	pieces  []piece
}

// place gives every piece an owner in three passes, each largest piece
// first. Keep: a piece stays with the instance that held it in prev (or
// the part it came from) while that instance holds at most 1.25 times the
// share (total/instances) with it. Fill: the others go to the least
// loaded instance, which holds at most the share, so that no instance
// ends above the share plus a piece. Balance: while the least loaded
// instance holds less than three quarters of the share, the most loaded
// one gives it its largest piece that leaves the receiver below the
// giver. Since no piece is above a quarter of the share, balance stops
// with every instance at half its share or more, and it never raises the
// most loaded. Placed again with its own result as prev, every piece is
// kept and balance finds nothing to move.
func place(owners map[string]string, pieces []piece, instances []string, prev Plan, share float64) {
	loads := make(map[string]*load, len(instances))
	for _, in := range instances {
		loads[in] = &load{}
	}
	give := func(in string, pc piece) {
		loads[in].records += pc.size
		loads[in].pieces = append(loads[in].pieces, pc)
	}
	eps := share * 1e-9 // sums of float shares
	var rest []piece
	for _, pc := range pieces {
		was, ok := prev.Owners[pc.id]
		if !ok && pc.parent != "" {
			was, ok = prev.Owners[pc.parent]
		}
		if l := loads[was]; ok && l != nil && l.records+pc.size <= 1.25*share+eps {
			give(was, pc)
			continue
		}
		rest = append(rest, pc)
	}
	for _, pc := range rest {
		give(leastLoaded(instances, loads), pc)
	}
	balance(instances, loads, share, eps)
	for in, l := range loads {
		for _, pc := range l.pieces {
			owners[pc.id] = in
		}
	}
}

// balance moves pieces from the most loaded instance to the least loaded
// while the least loaded holds less than three quarters of share (see
// place). Each move lowers the sum of the squared loads, so it ends.
func balance(instances []string, loads map[string]*load, share, eps float64) {
	for {
		lo := leastLoaded(instances, loads)
		if loads[lo].records >= 0.75*share-eps {
			return
		}
		hi := instances[0]
		for _, in := range instances[1:] {
			if loads[in].records > loads[hi].records {
				hi = in
			}
		}
		from, to := loads[hi], loads[lo]
		best := -1
		for i, pc := range from.pieces { // in the order given: the largest first
			if to.records+pc.size < from.records-pc.size-eps && (best < 0 || pc.size > from.pieces[best].size) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		pc := from.pieces[best]
		from.pieces = append(from.pieces[:best], from.pieces[best+1:]...)
		from.records -= pc.size
		to.records += pc.size
		to.pieces = append(to.pieces, pc)
	}
}

// leastLoaded returns the instance with the fewest records, then the
// fewest pieces, then the first name.
func leastLoaded(instances []string, loads map[string]*load) string {
	best := instances[0]
	for _, in := range instances[1:] {
		a, b := loads[in], loads[best]
		if cmp.Or(cmp.Compare(a.records, b.records), cmp.Compare(len(a.pieces), len(b.pieces)), strings.Compare(in, best)) < 0 {
			best = in
		}
	}
	return best
}

func validate(sizes map[string]uint64, instances []string) error {
	switch {
	case len(instances) == 0:
		return fmt.Errorf("no instance to place partitions on: %w", ErrInvalid)
	case len(instances) > MaxInstances:
		return fmt.Errorf("%d instances, over the limit of %d: %w", len(instances), MaxInstances, ErrInvalid)
	}
	seen := make(map[string]bool, len(instances))
	for _, in := range instances {
		if in == "" || len(in) > maxInstanceName {
			return fmt.Errorf("instance name %.20q: it must be 1 to %d bytes: %w", in, maxInstanceName, ErrInvalid)
		}
		if seen[in] {
			return fmt.Errorf("instance %q is named twice: %w", in, ErrInvalid)
		}
		seen[in] = true
	}
	for proc := range sizes {
		if err := validProcessor(proc); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
