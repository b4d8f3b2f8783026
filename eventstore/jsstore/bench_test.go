package jsstore_test

// Each amends operation is measured next to the raw JetStream operation it
// wraps, in the same run (sub-benchmarks "amends" and "raw"); compare their
// ns/op. Run: go test -run '^$' -bench . ./eventstore/jsstore/

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// parallel runs op b.N times spread over n goroutines.
func parallel(b *testing.B, n int, op func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	b.ResetTimer()
	for range n {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := op(i); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// rawMsg builds the message Append would publish for s, with the same
// headers.
func rawMessage(b *testing.B, st *jsstore.Store, s eventstore.Stream, prevSeqs string, firstSeq uint64) *nats.Msg {
	data, err := eventstore.Encode(&s)
	if err != nil {
		b.Fatal(err)
	}
	subj, err := st.Subject(s.Aggregate)
	if err != nil {
		b.Fatal(err)
	}
	m := nats.NewMsg(subj)
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, s.ID)
	last, _, _ := strings.Cut(prevSeqs, ",")
	if last == "" {
		last = "0"
	}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, last)
	m.Header.Set(jsstore.HeaderVersion, strconv.FormatUint(s.Version, 10))
	if prevSeqs != "" {
		m.Header.Set(jsstore.HeaderPrevSeqs, prevSeqs)
		m.Header.Set(jsstore.HeaderFirstSeq, strconv.FormatUint(firstSeq, 10))
	}
	return m
}

func benchStream(a eventstore.AggregateID, v uint64) eventstore.Stream {
	s := newStream(a, "order_placed", map[string]any{"sku": "A-1", "qty": 2, "price": 1999})
	s.Version = v
	return s
}

// BenchmarkAppendNew appends the first stream of new aggregates with N
// appenders, next to raw publishes of the same messages by N publishers.
func BenchmarkAppendNew(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) {
			st, js, _ := newStore(b)
			if err := st.Provision(b.Context(), "orders"); err != nil {
				b.Fatal(err)
			}
			b.Run("raw", func(b *testing.B) {
				msgs := make([]*nats.Msg, b.N)
				for i := range msgs {
					msgs[i] = rawMessage(b, st, benchStream(order(uuid.NewString()), 1), "", 0)
				}
				parallel(b, n, func(i int) error {
					_, err := js.PublishMsg(context.Background(), msgs[i])
					return err
				})
			})
			b.Run("amends", func(b *testing.B) {
				streams := make([]eventstore.Stream, b.N)
				for i := range streams {
					streams[i] = benchStream(order(uuid.NewString()), 1)
				}
				parallel(b, n, func(i int) error {
					_, err := st.Append(context.Background(), streams[i], 0)
					return err
				})
			})
		})
	}
}

// BenchmarkAppendExisting appends the next version of existing aggregates
// (the store knows their position from its previous append), next to raw
// publishes of the same messages with the expected sequence known.
func BenchmarkAppendExisting(b *testing.B) {
	const aggregates = 256
	st, js, _ := newStore(b)
	if err := st.Provision(b.Context(), "orders"); err != nil {
		b.Fatal(err)
	}
	type agg struct {
		id       eventstore.AggregateID
		version  uint64
		prevs    string // the raw side's previous-sequence list
		firstSeq uint64
	}
	raw, ours := make([]agg, aggregates), make([]agg, aggregates)
	for i := range aggregates {
		raw[i].id, ours[i].id = order(uuid.NewString()), order(uuid.NewString())
	}
	b.Run("raw", func(b *testing.B) {
		parallel(b, 1, func(i int) error {
			a := &raw[i%aggregates]
			ack, err := js.PublishMsg(context.Background(), rawMessage(b, st, benchStream(a.id, a.version+1), a.prevs, a.firstSeq))
			if err != nil {
				return err
			}
			if a.firstSeq == 0 {
				a.firstSeq = ack.Sequence
			}
			a.version++
			a.prevs = strconv.FormatUint(ack.Sequence, 10) + "," + a.prevs
			if strings.Count(a.prevs, ",") > 16 {
				a.prevs = a.prevs[:strings.LastIndexByte(strings.TrimSuffix(a.prevs, ","), ',')+1]
			}
			a.prevs = strings.TrimSuffix(a.prevs, ",")
			return nil
		})
	})
	b.Run("amends", func(b *testing.B) {
		parallel(b, 1, func(i int) error {
			a := &ours[i%aggregates]
			c, err := st.Append(context.Background(), benchStream(a.id, 0), a.version)
			a.version = c.Version
			return err
		})
	})
}

// BenchmarkLoad loads 5-version aggregates spread through a busy stream.
// The raw baseline is the fewest direct gets any client can load them with
// when JetStream has no per-subject index: the last message by subject,
// then the 4 earlier ones by sequence (known here in advance).
// "raw-known-seqs" is a lower bound no real client reaches: all 5 by known
// sequence, without finding the last one.
func BenchmarkLoad(b *testing.B) {
	st, js, _ := newStore(b)
	const aggregates, versions = 200, 5
	ids := make([]eventstore.AggregateID, aggregates)
	seqs := make([][]uint64, aggregates)
	for i := range ids {
		ids[i] = order(uuid.NewString())
	}
	for v := range uint64(versions) {
		for i, a := range ids {
			c, err := st.Append(b.Context(), benchStream(a, 0), v)
			if err != nil {
				b.Fatal(err)
			}
			seqs[i] = append(seqs[i], c.Seq)
		}
	}
	stream, err := js.Stream(b.Context(), st.StreamName("orders"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("raw", func(b *testing.B) {
		parallel(b, 1, func(i int) error {
			subj, _ := st.Subject(ids[i%aggregates])
			if _, err := stream.GetLastMsgForSubject(context.Background(), subj); err != nil {
				return err
			}
			for _, s := range seqs[i%aggregates][:versions-1] {
				if _, err := stream.GetMsg(context.Background(), s); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("raw-known-seqs", func(b *testing.B) {
		parallel(b, 1, func(i int) error {
			for _, s := range seqs[i%aggregates] {
				if _, err := stream.GetMsg(context.Background(), s); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("amends", func(b *testing.B) {
		parallel(b, 1, func(i int) error {
			got, err := st.Load(context.Background(), ids[i%aggregates], 1)
			if err == nil && len(got) != versions {
				err = fmt.Errorf("loaded %d versions", len(got))
			}
			return err
		})
	})
	// The alternative Load rejected for short histories: one batch direct
	// get walking the stream from the aggregate's first sequence.
	b.Run("batch-direct-get", func(b *testing.B) {
		nc := js.Conn()
		parallel(b, 1, func(i int) error {
			subj, _ := st.Subject(ids[i%aggregates])
			return batchGet(nc, st.StreamName("orders"), subj, seqs[i%aggregates][0], versions)
		})
	})
}

func batchGet(nc *nats.Conn, stream, subj string, start uint64, n int) error {
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	req := fmt.Sprintf(`{"seq":%d,"next_by_subj":%q,"batch":%d}`, start, subj, n)
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, []byte(req)); err != nil {
		return err
	}
	for got := 0; ; {
		m, err := sub.NextMsgWithContext(context.Background())
		if err != nil {
			return err
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			if got != n {
				return fmt.Errorf("batch got %d of %d", got, n)
			}
			return nil
		}
		got++
	}
}
