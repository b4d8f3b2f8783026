package notify

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/quarantine"
)

// The batch bucket (server.DefaultBatchBucket) as a stream: batch results
// are read from it with a durable consumer, so none is missed.
const (
	batchBucket  = "amends_batches"
	batchStream  = "KV_" + batchBucket
	batchSubject = "$KV." + batchBucket + "."
	// maxBatchEntry bounds a batch entry the notifier decodes.
	maxBatchEntry = 8 << 20
)

func (n *Notifier) batchConsumer() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       n.opts.durable + "-batches",
		Description:   "amends: delivers notifications of finished batches",
		FilterSubject: batchSubject + ">",
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       n.opts.ackWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	}
}

// storedBatch is the part of a batch bucket entry the notifier reads.
type storedBatch struct {
	Running bool `json:"running"`
	Result  *struct {
		Command   string         `json:"command"`
		RequestID string         `json:"requestId"`
		DryRun    bool           `json:"dryRun"`
		Matched   int            `json:"matched"`
		Counts    map[string]int `json:"counts"`
		Complete  bool           `json:"complete"`
	} `json:"result"`
}

// batchNote returns the notification of a batch bucket entry, or false if
// it is not a finished batch (an idempotency key, a running batch, a
// deletion). Pure.
func batchNote(subject string, data []byte, op string, seq uint64, at int64) (*Notification, bool, error) {
	key := strings.TrimPrefix(subject, batchSubject)
	if !strings.HasPrefix(key, "b_") || op != "" {
		return nil, false, nil
	}
	var b storedBatch
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, false, err
	}
	if b.Running || b.Result == nil || b.Result.DryRun {
		return nil, false, nil
	}
	r := b.Result
	return &Notification{
		ID:   uuid.NewSHA1(namespace, []byte("batch\x00"+key+"\x00"+r.RequestID+"\x00"+strconv.FormatUint(seq, 10))).String(),
		Type: TypeBatchCompleted, Time: at,
		Batch: &BatchSummary{Command: r.Command, RequestID: r.RequestID, Matched: r.Matched, Complete: r.Complete, Counts: r.Counts},
	}, true, nil
}

// handleBatch delivers the notification of a finished batch; ack
// semantics as handleRecord's.
func (n *Notifier) handleBatch(ctx context.Context, m jetstream.Msg) {
	consumer := n.opts.durable + "-batches"
	if len(m.Data()) > maxBatchEntry {
		n.quarantine(ctx, m, consumer, quarantine.ReasonUndecodable, errTooLarge)
		return
	}
	var seq uint64
	at := n.opts.clock.Now().UnixMilli()
	if md, err := m.Metadata(); err == nil {
		seq, at = md.Sequence.Stream, md.Timestamp.UnixMilli()
	}
	note, ok, err := batchNote(m.Subject(), m.Data(), m.Headers().Get("KV-Operation"), seq, at)
	n.settleNote(ctx, m, consumer, note, ok, err)
}

var errTooLarge = errors.New("the batch entry is larger than 8 MiB")
