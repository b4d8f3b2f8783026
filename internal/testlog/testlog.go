// Package testlog is the one way a test reads what the code under test
// logs: a Buffer that a logger writes to while the test reads it.
package testlog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Buffer holds what is written to it. Its methods are safe for concurrent
// use: a logger may write while a test reads.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the lines written so far that contain every one of parts.
func (b *Buffer) Lines(parts ...string) []string {
	var out []string
	for line := range strings.SplitSeq(b.String(), "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// Count returns how many times substr was written.
func (b *Buffer) Count(substr string) int {
	return strings.Count(b.String(), substr)
}

// Longest returns the length of the longest line written so far.
func (b *Buffer) Longest() int {
	n := 0
	for line := range strings.SplitSeq(b.String(), "\n") {
		n = max(n, len(line))
	}
	return n
}

// Logger returns a text logger of level and above that writes to b.
func (b *Buffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: level}))
}
