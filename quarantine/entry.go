package quarantine

import (
	"unicode/utf8"

	"github.com/amends-dev/amends/api"
)

// Reason says why a message was quarantined (the API's type). The values
// are stable: they are metric labels and appear in the API.
type Reason = api.QuarantineReason

const (
	// ReasonUndecodable: the message, or one of its events, does not
	// decode.
	ReasonUndecodable = api.QuarantineUndecodable
	// ReasonCorrupt: the message decodes, but what it refers to (the
	// record's history, the stream it points into) is corrupt or invalid.
	ReasonCorrupt = api.QuarantineCorrupt
	// ReasonInvalidView: the view the message would produce is one the
	// reader would reject, so it is not written.
	ReasonInvalidView = api.QuarantineInvalidView
	// ReasonRetriesExhausted: an error that might have been transient
	// persisted through the bounded number of deliveries (Retry).
	ReasonRetriesExhausted = api.QuarantineRetriesExhausted
	// ReasonInvalidEntry: a KV bucket holds an entry its decoder refuses
	// (RecordKV).
	ReasonInvalidEntry = api.QuarantineInvalidEntry
)

// KindKV is the Kind of an entry about a KV bucket's entry (RecordKV).
const KindKV = api.QuarantineKindKV

// KindSnapshot is the Kind of an entry about a stored snapshot that could
// not be used (projection's index snapshots).
const KindSnapshot = api.QuarantineKindSnapshot

// Reasons lists every reason, in a stable order.
var Reasons = []Reason{ReasonUndecodable, ReasonCorrupt, ReasonInvalidView, ReasonRetriesExhausted, ReasonInvalidEntry}

// maxErrorLen bounds Entry.Error in bytes.
const maxErrorLen = 1024

// Entry is one quarantined message, as Record stores it and List returns
// it (the API's type). Record ignores its ID, the entry's sequence in the
// quarantine stream and List's cursor.
type Entry = api.QuarantineEntry

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
