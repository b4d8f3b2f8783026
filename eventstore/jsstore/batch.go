package jsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
)

// batchSize is how many messages one batch direct get asks for.
const batchSize = 512

// batchFrom reads the messages on subj with sequence >= start, in sequence
// order, with batch direct gets (one request per batchSize messages). It
// calls fn for each message until fn returns false or none are left.
//
// The server finds each message by walking the stream from start, so this
// is the right tool for a long run of one aggregate's streams, not for a
// few streams spread through a busy stream.
func (s *Store) batchFrom(ctx context.Context, h *streamHandle, subj string, start uint64, fn func(*rawMsg) (bool, error)) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	inbox := s.nc.NewInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("batch get on %s: subscribe: %w", subj, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	api := s.opts.apiPrefix + "DIRECT.GET." + h.name
	for {
		req, _ := json.Marshal(struct {
			Seq     uint64 `json:"seq"`
			NextFor string `json:"next_by_subj"`
			Batch   int    `json:"batch"`
		}{start, subj, batchSize})
		if err := s.nc.PublishRequest(api, inbox, req); err != nil {
			return fmt.Errorf("batch get on %s: %w", subj, err)
		}
		got := 0
		for {
			msg, err := sub.NextMsgWithContext(ctx)
			if err != nil {
				return fmt.Errorf("batch get on %s from sequence %d: %w", subj, start, err)
			}
			if status := msg.Header.Get("Status"); status != "" && len(msg.Data) == 0 {
				switch status {
				case "404":
					return nil // nothing at or after start
				case "204":
					pending, _ := strconv.ParseUint(msg.Header.Get("Nats-Num-Pending"), 10, 64)
					if pending == 0 || got == 0 {
						return nil
					}
				default:
					return fmt.Errorf("batch get on %s: status %s %s", subj, status, msg.Header.Get("Description"))
				}
				break
			}
			m, err := directMsg(msg)
			if err != nil {
				return err
			}
			got++
			start = m.seq + 1
			more, err := fn(m)
			if err != nil || !more {
				return err
			}
		}
	}
}

func directMsg(msg *nats.Msg) (*rawMsg, error) {
	seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("direct get response without a valid %s header: %w", jetstream.SequenceHeader, eventstore.ErrCorrupt)
	}
	return &rawMsg{subject: msg.Header.Get(jetstream.SubjectHeader), seq: seq, header: msg.Header, data: msg.Data}, nil
}
