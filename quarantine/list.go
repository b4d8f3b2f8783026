package quarantine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/nats-io/nats.go/jetstream"
)

// MaxLimit is the largest page List returns.
const MaxLimit = 500

// Query selects a page of entries.
type Query struct {
	// After is the cursor: entries with an ID greater than it (0: from the
	// oldest).
	After uint64
	// Limit is the page size, 1 to MaxLimit (0: 100).
	Limit int
	// Consumer keeps only the entries of one consumer ("": all).
	Consumer string
}

// Page is one page of entries, oldest first.
type Page struct {
	// Entries are the page's entries.
	Entries []Entry `json:"entries"`
	// Next is the cursor of the next page (Query.After), 0 if this is the
	// last one.
	Next uint64 `json:"next,omitempty"`
}

// List returns the page of entries q selects, oldest first, reading at
// most Limit+1 entries. An entry that does not decode (the stream is open
// to anyone who can publish) is listed with its ID, its subject and an
// Error saying so. It returns an error wrapping ErrInvalidQuery for a
// limit or consumer it cannot use, or JetStream's error. Safe for
// concurrent use.
func (q *Quarantine) List(ctx context.Context, query Query) (Page, error) {
	limit := query.Limit
	switch {
	case limit == 0:
		limit = 100
	case !bounds.Within(limit, 0, MaxLimit):
		return Page{}, fmt.Errorf("limit must be between 1 and %d, got %d: %w", MaxLimit, limit, ErrInvalidQuery)
	}
	filter := q.opts.stream + ".>"
	if query.Consumer != "" {
		if token(query.Consumer) != query.Consumer || len(query.Consumer) > 256 {
			return Page{}, fmt.Errorf("consumer %q must be a consumer name of at most 256 characters, without dots, wildcards or spaces: %w", truncate(query.Consumer, 64), ErrInvalidQuery)
		}
		filter = q.opts.stream + "." + query.Consumer + ".>"
	}
	s, err := q.handle(ctx)
	if err != nil {
		return Page{}, err
	}
	page := Page{Entries: []Entry{}}
	next := query.After + 1
	for len(page.Entries) <= limit {
		raw, err := s.GetMsg(ctx, next, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return page, nil
		}
		if err != nil {
			return Page{}, fmt.Errorf("read quarantine stream %s after %d: %w", q.opts.stream, next-1, err)
		}
		if len(page.Entries) == limit {
			page.Next = page.Entries[limit-1].ID
			return page, nil
		}
		page.Entries = append(page.Entries, decodeEntry(raw))
		next = raw.Sequence + 1
	}
	return page, nil
}

// decodeEntry reads a stored entry.
// All returns every entry that query selects from query.After on, oldest
// first, paging through List with the largest page. It returns List's
// errors. Meant for tests and small quarantines: the result is not bounded
// beyond the stream's own cap on entries (WithMaxEntries). Safe for
// concurrent use.
func (q *Quarantine) All(ctx context.Context, query Query) ([]Entry, error) {
	query.Limit = MaxLimit
	var all []Entry
	for {
		p, err := q.List(ctx, query)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Entries...)
		if p.Next == 0 {
			return all, nil
		}
		query.After = p.Next
	}
}

func decodeEntry(raw *jetstream.RawStreamMsg) Entry {
	var e Entry
	if len(raw.Data) > maxEntrySize {
		e = Entry{Subject: raw.Subject, Error: fmt.Sprintf("stored entry is %d bytes, over %d", len(raw.Data), maxEntrySize)}
	} else if err := json.Unmarshal(raw.Data, &e); err != nil {
		e = Entry{Subject: raw.Subject, Error: "stored entry does not decode: " + truncate(err.Error(), 256)}
	}
	e.ID = raw.Sequence
	e.Subject = truncate(e.Subject, 1024)
	e.Key = truncate(e.Key, 1024)
	e.Error = truncate(e.Error, maxErrorLen)
	return e
}

func sortCounts(c []Count) {
	slices.SortFunc(c, func(a, b Count) int {
		return cmp.Or(strings.Compare(a.Consumer, b.Consumer), strings.Compare(string(a.Reason), string(b.Reason)))
	})
}

// FindKV returns the entry RecordKV stored for revision of key in bucket,
// if there is one: one direct read of its subject. Errors as List's.
func (q *Quarantine) FindKV(ctx context.Context, bucket, key string, revision uint64) (Entry, bool, error) {
	s, err := q.handle(ctx)
	if err != nil {
		return Entry{}, false, err
	}
	raw, err := s.GetLastMsgForSubject(ctx, q.subject(truncate(bucket, 256), "KV_"+truncate(bucket, 256), revision))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("read quarantine stream %s: %w", q.opts.stream, err)
	}
	e := decodeEntry(raw)
	if e.Kind != KindKV || e.Bucket != bucket || e.Key != key || e.Seq != revision {
		return Entry{}, false, nil
	}
	return e, true, nil
}
