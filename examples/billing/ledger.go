package billing

import (
	"context"
	"sync"

	"github.com/amends-dev/amends/processor"
)

// Ledger posts each invoice once: it keys entries by the event id, so a
// redelivery posts nothing twice. Safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	entries map[string]int64 // event id → cents
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{entries: make(map[string]int64)} }

// Post is the ledger's function.
func (l *Ledger) Post(_ context.Context, d *processor.Delivery, inv Invoice) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[d.Event.ID] = inv.Cents
	return nil
}

// Total returns the cents posted.
func (l *Ledger) Total() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum int64
	for _, c := range l.entries {
		sum += c
	}
	return sum
}

// Posted returns how many invoices were posted.
func (l *Ledger) Posted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}
