package quarantine

import "github.com/amends-dev/amends/internal/text"

// Reason says why a message was quarantined. The values are stable: they
// are metric labels, and the API's QuarantineReason has the same ones.
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
	// ReasonInvalidEntry: a KV bucket holds an entry its decoder refuses
	// (RecordKV).
	ReasonInvalidEntry Reason = "invalid_entry"
)

// KindKV is the Kind of an entry about a KV bucket's entry (RecordKV).
const KindKV = "kv"

// KindSnapshot is the Kind of an entry about a stored snapshot that could
// not be used (projection's index snapshots).
const KindSnapshot = "snapshot"

// Reasons lists every reason, in a stable order.
var Reasons = []Reason{ReasonUndecodable, ReasonCorrupt, ReasonInvalidView, ReasonRetriesExhausted, ReasonInvalidEntry}

// maxErrorLen bounds Entry.Error in bytes.
const maxErrorLen = 1024

// Entry is one quarantined message, as Record stores it and List returns
// it. Record ignores its ID, the entry's sequence in the quarantine stream
// and List's cursor. Its JSON is the API's QuarantineEntry.
//
// A message's entry names it by Stream and Seq. An entry of Kind KindKV is
// about an entry of a KV bucket: then Bucket and Key name it, Stream is
// the bucket's stream (KV_<bucket>), Seq its revision, Consumer the bucket
// and Deliveries 0.
type Entry struct {
	// ID is the entry's sequence in the quarantine stream: a page's
	// cursor.
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
	// Kind is "" for a message, KindKV for a bucket's entry, KindSnapshot
	// for a snapshot's.
	Kind string `json:"kind,omitempty"`
	// Bucket and Key name the bucket's entry (Kind "kv").
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	return text.Cut(s, n-len(mark)) + mark
}
