package projection

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// batchSize bounds how many bucket updates are applied under one lock.
const batchSize = 1024

// Run loads every view of the bucket into the index, closes Ready, and
// keeps the index current by watching the bucket until ctx ends; then it
// stops the watch and returns nil. It returns an error if the watch cannot
// start or stops on its own (e.g. the connection closed). A value that is
// not a view is skipped and counted (Corrupt). Call Run once per Index.
func (ix *Index) Run(ctx context.Context) error {
	w, err := ix.views.WatchAll(ctx)
	if ctx.Err() != nil {
		if err == nil {
			w.Stop()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("index: watch the views bucket: %w", err)
	}
	defer w.Stop()
	updates := w.Updates()
	batch := make([]jetstream.KeyValueEntry, 0, batchSize)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-updates:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("index: the watch of the views bucket stopped")
			}
			batch = append(batch, e)
		}
	more:
		for len(batch) < batchSize {
			select {
			case e, ok := <-updates:
				if !ok {
					break more
				}
				batch = append(batch, e)
			default:
				break more
			}
		}
		ix.applyBatch(batch)
	}
}

// change is one decoded bucket update.
type change struct {
	view    View
	deleted string // the id of a deleted record
	ready   bool   // the watch has delivered every initial value
}

// applyBatch decodes updates outside the lock and applies them under it.
func (ix *Index) applyBatch(batch []jetstream.KeyValueEntry) {
	changes := make([]change, 0, len(batch))
	for _, e := range batch {
		switch {
		case e == nil:
			changes = append(changes, change{ready: true})
		case e.Operation() == jetstream.KeyValuePut:
			v, err := decodeView(e.Value())
			if err != nil {
				ix.corrupt.Add(1)
				continue
			}
			changes = append(changes, change{view: v})
		default: // deleted or purged
			id, err := DecodeKey(e.Key())
			if err != nil {
				ix.corrupt.Add(1)
				continue
			}
			changes = append(changes, change{deleted: id})
		}
	}
	ix.mu.Lock()
	for i := range changes {
		c := &changes[i]
		switch {
		case c.ready:
			ix.readyOnce.Do(func() { close(ix.ready) })
		case c.deleted != "":
			ix.remove(c.deleted)
		default:
			ix.put(&c.view)
		}
	}
	ix.mu.Unlock()
}

// Corrupt returns how many bucket values the index skipped because they
// were not views.
func (ix *Index) Corrupt() uint64 { return ix.corrupt.Load() }
