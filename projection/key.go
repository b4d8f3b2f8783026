package projection

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/token"
	"github.com/amends-dev/amends/partition"
)

// tokens encodes record ids and processor names as tokens of KV keys: '='
// starts an encoded one ('~' is not allowed in keys).
var tokens = token.Codec{Mark: '='}

// hexDigits are the slot's digits in a key.
const hexDigits = "0123456789abcdef"

// ViewKey returns the KV key of the view of record id whose function's
// processor is processor: "<processor>.<lo>.<hi>.<id>", where lo and hi
// are the low and high hexadecimal digits of the record's slot
// (partition.Slot), so that a watch of some partitions reads only their
// keys (KeyFilters). Names made only of [A-Za-z0-9_-] (record ids are
// UUIDs) are used as they are; any other becomes '=' followed by its
// unpadded base64url encoding, which only uses characters KV keys allow.
// The mapping is reversible (ParseKey) and injective. An id that is not
// a record id (CheckID) or an empty processor is an error matching
// ErrInvalidQuery.
func ViewKey(processor, id string) (string, error) {
	if err := CheckID(id); err != nil {
		return "", err
	}
	proc, err := tokens.Encode(processor)
	if err != nil {
		return "", fmt.Errorf("processor is empty: %w", ErrInvalidQuery)
	}
	return proc + "." + recordSuffix(id), nil
}

// slotDigits returns the low and high hexadecimal digits of record id's
// slot (partition.Slot), as its keys hold them.
func slotDigits(id string) (lo, hi byte) {
	slot := partition.Slot(id)
	return hexDigits[slot&0xf], hexDigits[slot>>4]
}

// recordSuffix is what follows the processor in every key of record id:
// "<lo>.<hi>.<id>". id must pass CheckID.
func recordSuffix(id string) string {
	idTok, _ := tokens.Encode(id) // not empty: checked
	lo, hi := slotDigits(id)
	return string([]byte{lo, '.', hi, '.'}) + idTok
}

// recordPattern returns the KV key pattern of every key record id's view
// may have: "*.<lo>.<hi>.<id>", whatever its processor. The last message
// on it is the record's current view (a view that moves to another
// processor is deleted from its old key first). id must pass CheckID.
func recordPattern(id string) string {
	return "*." + recordSuffix(id)
}

// ParseKey returns the processor and record id of a view key (ViewKey).
// A key ViewKey cannot make is an error matching ErrCorruptView.
func ParseKey(key string) (processor, id string, err error) {
	proc, rest, ok1 := strings.Cut(key, ".")
	lo, rest, ok2 := strings.Cut(rest, ".")
	hi, idTok, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 {
		return "", "", fmt.Errorf("view key %.60q is not <processor>.<lo>.<hi>.<record id>: %w", key, ErrCorruptView)
	}
	if processor, err = tokens.Decode(proc); err != nil {
		return "", "", fmt.Errorf("view key %.60q: processor: %v: %w", key, err, ErrCorruptView)
	}
	if id, err = tokens.Decode(idTok); err != nil {
		return "", "", fmt.Errorf("view key %.60q: record id: %v: %w", key, err, ErrCorruptView)
	}
	if CheckID(id) != nil {
		return "", "", fmt.Errorf("view key %.60q holds an id that cannot be a record id: %w", key, ErrCorruptView)
	}
	if wantLo, wantHi := slotDigits(id); lo != string(wantLo) || hi != string(wantHi) {
		return "", "", fmt.Errorf("view key %.60q: the slot %s.%s is not the record's (%c.%c): %w", key, lo, hi, wantLo, wantHi, ErrCorruptView)
	}
	return processor, id, nil
}

// keyOf reports whether key is the view key of processor and record id,
// without allocating when both are plain tokens.
func keyOf(key, processor, id string) bool {
	proc, rest, _ := strings.Cut(key, ".")
	if len(rest) < 5 || rest[1] != '.' || rest[3] != '.' || processor == "" || CheckID(id) != nil {
		return false
	}
	if lo, hi := slotDigits(id); rest[0] != lo || rest[2] != hi {
		return false
	}
	return tokenIs(proc, processor) && tokenIs(rest[4:], id)
}

// tokenIs reports whether tok is the token of name; a plain name is its
// own token, so it allocates nothing then.
func tokenIs(tok, name string) bool {
	enc, err := tokens.Encode(name)
	return err == nil && enc == tok
}

// ProcessorKey returns the key that says processor has views (one token,
// so no view's key; its value is empty): the projector writes it with a
// processor's first view, so that an instance that watches only its
// partitions (and every processor's key) still learns of processors no
// partition holds yet (Index.Unplaced). Whoever writes views past the
// projector (a bench filling a bucket) writes it too. An empty processor
// is an error matching ErrInvalidQuery.
func ProcessorKey(processor string) (string, error) {
	tok, err := tokens.Encode(processor)
	if err != nil {
		return "", fmt.Errorf("processor is empty: %w", ErrInvalidQuery)
	}
	return tok, nil
}

// processorKeys is the pattern of every processor's key.
const processorKeys = "*"

// processorOfKey returns the processor a processor key names (see
// ProcessorKey), or false for any other key. Its value is empty; a key
// of one token with a value is no view and no processor's key.
func processorOfKey(key string) (string, bool) {
	if strings.IndexByte(key, '.') >= 0 {
		return "", false
	}
	proc, err := tokens.Decode(key)
	return proc, err == nil
}

// KeyFilters returns the KV key patterns that match the keys of the views
// partitions hold, and no other view's key: what a watch of those
// partitions reads. A part of a processor split into n parts has 16/n
// patterns for n up to 16 ("<processor>.<lo>.>") and 256/n past it
// ("<processor>.<lo>.<hi>.>"), at most 8; a whole processor has one
// ("<processor>.>"). No two patterns overlap (JetStream refuses a
// consumer whose filters do): one that another covers is left out. An id
// that is not a partition's (partition.CheckID) is left out.
func KeyFilters(partitions []string) []string {
	var out []string
	for _, id := range partitions {
		proc, slots, err := partition.SlotsOfID(id)
		if err != nil {
			continue
		}
		tok, err := tokens.Encode(proc)
		if err != nil {
			continue
		}
		if len(slots) == partition.Slots {
			out = append(out, tok+".>")
			continue
		}
		var byLo [16][]int
		for _, s := range slots {
			byLo[s&0xf] = append(byLo[s&0xf], s>>4)
		}
		for lo, his := range byLo {
			switch len(his) {
			case 0:
			case 16:
				out = append(out, tok+"."+hexDigits[lo:lo+1]+".>")
			default:
				for _, hi := range his {
					out = append(out, tok+"."+hexDigits[lo:lo+1]+"."+hexDigits[hi:hi+1]+".>")
				}
			}
		}
	}
	return uncovered(out)
}

// uncovered returns the patterns of ps (each "<tokens>.>") that no other
// one covers, each once, in their order.
func uncovered(ps []string) []string {
	have := make(map[string]bool, len(ps))
	for _, p := range ps {
		have[p] = true
	}
	seen := make(map[string]bool, len(ps))
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if seen[p] {
			continue
		}
		seen[p] = true
		covered := false
		for prefix := strings.TrimSuffix(p, ".>"); !covered; {
			i := strings.LastIndexByte(prefix, '.')
			if i < 0 {
				break
			}
			prefix = prefix[:i]
			covered = have[prefix+".>"]
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// CheckID reports whether id can be a record id: 1 to
// eventstore.MaxIDLength bytes of UTF-8 text without control characters,
// the rule every aggregate id of the event store follows. The error
// matches ErrInvalidQuery and says which rule id breaks. Get, GetView and
// History check it before they send anything to NATS.
func CheckID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("record id is empty; it must be 1 to %d bytes of UTF-8 text: %w", eventstore.MaxIDLength, ErrInvalidQuery)
	case len(id) > eventstore.MaxIDLength:
		return fmt.Errorf("record id is %d bytes, over the limit of %d: %w", len(id), eventstore.MaxIDLength, ErrInvalidQuery)
	case !utf8.ValidString(id):
		return fmt.Errorf("record id %q is not valid UTF-8: %w", id, ErrInvalidQuery)
	}
	for i, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("record id %q has the control character %U at byte %d: %w", id, r, i, ErrInvalidQuery)
		}
	}
	return nil
}
