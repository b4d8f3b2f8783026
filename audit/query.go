package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/nats-io/nats.go/jetstream"
)

// Query limits.
const (
	// MaxLimit is the largest page.
	MaxLimit = 1000
	// DefaultLimit is the page size of a Query without one.
	DefaultLimit = 100
	// MaxScan bounds the messages one Query reads; a page that reached it
	// has a Next cursor even if it holds fewer entries than its limit.
	MaxScan = 10000
)

// Query selects entries; empty fields match every entry.
type Query struct {
	// Kind and Actor select by subject (the stream filters them).
	Kind  api.AuditKind
	Actor string
	// Record keeps the entries about one record.
	Record string
	// From and To (epoch ms, inclusive) bound the entries' times.
	From, To int64
	// After is the cursor: entries with a Seq greater than it.
	After uint64
	// Limit is the page size, 1 to MaxLimit (0: DefaultLimit).
	Limit int
}

// Page is one page of entries, oldest first.
type Page struct {
	Entries []api.AuditEntry `json:"entries"`
	// Next is the cursor of the next page (Query.After), 0 at the end.
	Next uint64 `json:"next,omitempty"`
	// Skipped counts the stored messages of this page's range that did
	// not decode or broke a limit (written by something else than amends).
	Skipped int `json:"skipped,omitempty"`
}

// Query returns the page of entries q selects, oldest first, reading at
// most MaxScan messages. It returns an error wrapping ErrInvalidQuery for
// a query it cannot run, or JetStream's error. Safe for concurrent use.
func (l *Log) Query(ctx context.Context, q Query) (Page, error) {
	if err := q.check(); err != nil {
		return Page{}, err
	}
	limit := cmp.Or(q.Limit, DefaultLimit)
	filter := q.subject()
	page := Page{Entries: []api.AuditEntry{}}
	next := q.After + 1
	for scanned := 0; scanned < MaxScan; scanned++ {
		raw, err := l.stream.GetMsg(ctx, next, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return page, nil
		}
		if err != nil {
			return Page{}, fmt.Errorf("read the audit stream after %d: %w", next-1, err)
		}
		next = raw.Sequence + 1
		e, err := decodeEntry(raw.Data)
		if err != nil {
			page.Skipped++
			continue
		}
		e.Seq = raw.Sequence
		if !q.selects(&e) {
			continue
		}
		if len(page.Entries) == limit {
			page.Next = page.Entries[limit-1].Seq
			return page, nil
		}
		page.Entries = append(page.Entries, e)
	}
	page.Next = next - 1
	return page, nil
}

// check checks q's limit, kind, sizes and time range.
func (q *Query) check() error {
	switch {
	case !bounds.Within(q.Limit, 0, MaxLimit):
		return fmt.Errorf("limit must be between 1 and %d, got %d: %w", MaxLimit, q.Limit, ErrInvalidQuery)
	case len(q.Actor) > MaxActorBytes || len(q.Record) > MaxIDBytes:
		return fmt.Errorf("actor and record must be at most %d bytes: %w", MaxIDBytes, ErrInvalidQuery)
	case q.From > 0 && q.To > 0 && q.To < q.From:
		return fmt.Errorf("to (%d) is before from (%d): %w", q.To, q.From, ErrInvalidQuery)
	}
	if q.Kind != "" {
		if _, err := ParseKind(string(q.Kind)); err != nil {
			return fmt.Errorf("%v: %w", err, ErrInvalidQuery)
		}
	}
	return nil
}

// subject is the stream subject q reads: its kind and actor, or all.
func (q *Query) subject() string {
	kind, actor := "*", "*"
	if q.Kind != "" {
		kind = string(q.Kind)
	}
	if q.Actor != "" {
		actor = actorToken(q.Actor)
	}
	return SubjectPrefix + kind + "." + actor
}

// selects reports whether e is within q's time range, record and actor
// (the subject selected the kind).
func (q *Query) selects(e *api.AuditEntry) bool {
	return (q.From <= 0 || e.Time >= q.From) && (q.To <= 0 || e.Time <= q.To) &&
		(q.Record == "" || e.Record == q.Record) && (q.Actor == "" || e.Actor == q.Actor)
}
