package quarantine

import "unicode/utf8"

// Reason says why a message was quarantined. The values are stable: they
// are metric labels and appear in the API.
type Reason string

const (
	// ReasonUndecodable: the message, or one of its events, does not
	// decode.
	ReasonUndecodable Reason = "undecodable"
	// ReasonCorrupt: the message decodes, but what it refers to (the
	// record's history, the stream it points into) is corrupt or invalid.
	ReasonCorrupt Reason = "corrupt"
	// ReasonInvalidView: the view the message would produce is one the
	// reader would reject, so it is not written.
	ReasonInvalidView Reason = "invalid_view"
	// ReasonRetriesExhausted: an error that might have been transient
	// persisted through the bounded number of deliveries (Retry).
	ReasonRetriesExhausted Reason = "retries_exhausted"
)

// Reasons lists every reason, in a stable order.
var Reasons = []Reason{ReasonUndecodable, ReasonCorrupt, ReasonInvalidView, ReasonRetriesExhausted}

// maxErrorLen bounds Entry.Error in bytes.
const maxErrorLen = 1024

// Entry is one quarantined message, as Record stores it and List returns
// it.
type Entry struct {
	// ID is the entry's sequence in the quarantine stream: List's cursor.
	// Record ignores it.
	ID uint64 `json:"id,omitempty"`
	// Stream and Seq locate the message: its stream and stream sequence.
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	// Subject is the message's subject.
	Subject string `json:"subject"`
	// Consumer is the durable consumer that quarantined it.
	Consumer string `json:"consumer"`
	// Reason says why, Error says what (at most 1 KiB).
	Reason Reason `json:"reason"`
	Error  string `json:"error"`
	// Deliveries is how often the consumer had received the message.
	Deliveries uint64 `json:"deliveries"`
	// At is when it was quarantined, in epoch ms.
	At int64 `json:"at"`
}

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
