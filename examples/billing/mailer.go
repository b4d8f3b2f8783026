package billing

import (
	"context"
	"fmt"
	"sync"
)

// FlakyMailer is an in-memory mail server that greylists the first sends
// of every mail. Safe for concurrent use.
type FlakyMailer struct {
	mu    sync.Mutex
	fails int            // greylist each mail's first fails sends
	tries map[string]int // sends per key
	sent  map[string]string
}

// NewFlakyMailer returns a mail server that greylists each mail's first
// fails sends.
func NewFlakyMailer(fails int) *FlakyMailer {
	return &FlakyMailer{fails: fails, tries: make(map[string]int), sent: make(map[string]string)}
}

// Send implements Mailer.
func (m *FlakyMailer) Send(_ context.Context, key, to, subject string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tries[key]++
	if m.tries[key] <= m.fails {
		return fmt.Errorf("send to %s: %w", to, ErrGreylisted)
	}
	m.sent[key] = to + ": " + subject
	return nil
}

// Sent returns the mail sent for key, "" if none.
func (m *FlakyMailer) Sent(key string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent[key]
}

// Tries returns how many sends of key were tried.
func (m *FlakyMailer) Tries(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tries[key]
}
