package api

import (
	"net/url"
	"strconv"
)

// QuarantineReason says why a message was quarantined. The values are
// stable: they are metric labels and appear in the API.
type QuarantineReason string

// The quarantine reasons.
const (
	// QuarantineUndecodable: the message, or one of its events, does not
	// decode.
	QuarantineUndecodable QuarantineReason = "undecodable"
	// QuarantineCorrupt: the message decodes, but what it refers to (the
	// record's history, the stream it points into) is corrupt or invalid.
	QuarantineCorrupt QuarantineReason = "corrupt"
	// QuarantineInvalidView: the view the message would produce is one the
	// reader would reject, so it is not written.
	QuarantineInvalidView QuarantineReason = "invalid_view"
	// QuarantineRetriesExhausted: an error that might have been transient
	// persisted through the bounded number of deliveries.
	QuarantineRetriesExhausted QuarantineReason = "retries_exhausted"
	// QuarantineInvalidEntry: a KV bucket holds an entry (a value, or its
	// key) that its decoder refuses; it is skipped, never acted on.
	QuarantineInvalidEntry QuarantineReason = "invalid_entry"
)

// QuarantineKindKV is the Kind of an entry about a KV bucket's entry.
const QuarantineKindKV = "kv"

// QuarantineKindSnapshot is the Kind of an entry about a stored snapshot
// that could not be used (an index snapshot: Bucket is its Object Store
// bucket, Key its object, Seq the revision it claims).
const QuarantineKindSnapshot = "snapshot"

// QuarantineEntry is one quarantined message, or (Kind "kv") one invalid
// entry of a KV bucket: then Bucket and Key name it, Stream is the
// bucket's stream (KV_<bucket>), Seq its revision, Consumer the bucket and
// Deliveries 0.
type QuarantineEntry struct {
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
	Reason QuarantineReason `json:"reason"`
	Error  string           `json:"error"`
	// Deliveries is how often the consumer had received the message.
	Deliveries uint64 `json:"deliveries"`
	// At is when it was quarantined, in epoch ms.
	At int64 `json:"at"`
	// Kind is "" for a message, QuarantineKindKV for a bucket's entry.
	Kind string `json:"kind,omitempty"`
	// Bucket and Key name the bucket's entry (Kind "kv").
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
}

// QuarantineQuery is a request of GET /api/v1/quarantine.
type QuarantineQuery struct {
	// Consumer selects the entries of one durable consumer; "" all.
	Consumer string
	// Cursor continues after the page that returned it (QuarantinePage.Next).
	Cursor string
	// Limit is the page size: 0 means the server's default (100); at most
	// the server's limit.
	Limit int
}

// QuarantinePage is the body of GET /api/v1/quarantine: entries oldest
// first, and the cursor of the next page.
type QuarantinePage struct {
	Entries []QuarantineEntry `json:"entries"`
	Next    string            `json:"next,omitempty"`
}

// Values returns q as the query parameters of GET /api/v1/quarantine:
// consumer, cursor and limit where set.
func (q QuarantineQuery) Values() url.Values {
	v := url.Values{}
	if q.Consumer != "" {
		v.Set("consumer", q.Consumer)
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}
