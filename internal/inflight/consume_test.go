package inflight_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/internal/natstest"
)

const waitFor = 30 * time.Second

// fixture is a stream S on subjects s.> with a durable consumer c.
func fixture(t *testing.T, ackWait time.Duration, maxAckPending int) (jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	js := natstest.New(t).JetStream()
	_, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	require.NoError(t, err)
	cons, err := js.CreateOrUpdateConsumer(t.Context(), "S", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: ackWait, MaxAckPending: maxAckPending})
	require.NoError(t, err)
	return js, cons
}

func publish(t *testing.T, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	for i := range n {
		_, err := js.PublishAsync(subject, fmt.Appendf(nil, "%d", i))
		require.NoError(t, err)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(waitFor):
		t.Fatalf("publishing did not complete within %s", waitFor)
	}
}

// consume runs rt.Consume on cons with h until the test stops it; stop
// returns Consume's result.
func consume(t *testing.T, rt *inflight.Runtime, cons jetstream.Consumer, h inflight.Handler) (stop func() error, stopping context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Consume(ctx, context.Background(), cons, h) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(waitFor):
				t.Errorf("Consume did not return within %s of its stop", waitFor)
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ctx
}

func newRuntime(t *testing.T, cfg inflight.Config) *inflight.Runtime {
	t.Helper()
	rt, err := inflight.New(cfg)
	require.NoError(t, err)
	return rt
}

// Every message is handed over once, in batches no larger than asked,
// and a subject's messages in stream order.
func TestConsumeKeepsEachSubjectsOrder(t *testing.T) {
	const subjects, per = 12, 50
	js, cons := fixture(t, 30*time.Second, 1000)
	for s := range subjects {
		publish(t, js, fmt.Sprintf("s.%d", s), per)
	}
	var mu sync.Mutex
	last := map[string]uint64{}
	count := map[string]int{}
	var disorder []string
	handled, maxBatch := 0, 0
	rt := newRuntime(t, inflight.Config{Name: "c", Lanes: 3, AckWait: 30 * time.Second, MaxAckPending: 1000, Batch: 16})
	stop, _ := consume(t, rt, cons, func(_ context.Context, _ *inflight.Lane, msgs []jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		maxBatch = max(maxBatch, len(msgs))
		for _, m := range msgs {
			md, err := m.Metadata()
			if !assert.NoError(t, err) {
				continue
			}
			if md.Sequence.Stream <= last[m.Subject()] {
				disorder = append(disorder, m.Subject())
			}
			last[m.Subject()] = md.Sequence.Stream
			count[m.Subject()]++
			handled++
			_ = m.Ack()
		}
	})
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return handled >= subjects*per }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	assert.Empty(t, disorder, "out of order")
	assert.Equal(t, subjects*per, handled, "each once")
	assert.LessOrEqual(t, maxBatch, 16)
	for s, n := range count {
		assert.Equal(t, per, n, "subject %s", s)
	}
	assert.Zero(t, rt.Held(), "every message settled")
}

// Messages queued behind a busy lane, and messages a handler left
// waiting without settling them, keep their lease for several AckWaits:
// none is redelivered.
func TestWaitingMessagesKeepTheirLease(t *testing.T) {
	// InProgress goes out every third of AckWait; 2 s leaves over a second
	// of slack for a late heartbeat on a busy machine.
	const ackWait = 2 * time.Second
	js, cons := fixture(t, ackWait, 100)
	publish(t, js, "s.busy", 5)   // one lane: the first blocks, four queue
	publish(t, js, "s.parked", 3) // left unsettled by their handler
	var counts inflight.Counters
	counts.Delivered, counts.Acked = new(atomic.Uint64), new(atomic.Uint64)
	rt := newRuntime(t, inflight.Config{Name: "c", Lanes: 1, AckWait: ackWait, MaxAckPending: 100, Counters: counts})
	release := make(chan struct{})
	var mu sync.Mutex
	var parked []jetstream.Msg
	stop, _ := consume(t, rt, cons, func(_ context.Context, _ *inflight.Lane, msgs []jetstream.Msg) {
		for _, m := range msgs {
			if m.Subject() == "s.parked" {
				mu.Lock()
				parked = append(parked, m)
				mu.Unlock()
				continue
			}
			<-release
			_ = m.Ack()
		}
	})
	require.Eventually(t, func() bool { return rt.Held() == 8 }, waitFor, 5*time.Millisecond, "all eight held")
	require.Never(t, func() bool { return counts.Delivered.Load() > 8 }, 3*ackWait, 20*time.Millisecond, "nothing redelivered while it waits")
	close(release)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(parked) == 3 }, waitFor, 5*time.Millisecond)
	mu.Lock()
	for _, m := range parked {
		require.NoError(t, m.Ack())
	}
	mu.Unlock()
	require.Eventually(t, func() bool { return rt.Held() == 0 }, waitFor, 5*time.Millisecond)
	require.NoError(t, stop())
	assert.Equal(t, uint64(8), counts.Delivered.Load())
	assert.Equal(t, uint64(8), counts.Acked.Load())
}

// Posted work runs on its lane in order with the lane's messages; once
// Consume stopped, Post refuses work.
func TestPostRunsOnTheLaneInOrder(t *testing.T) {
	js, cons := fixture(t, 30*time.Second, 100)
	publish(t, js, "s.a", 3)
	rt := newRuntime(t, inflight.Config{Name: "c", Lanes: 2, AckWait: 30 * time.Second, MaxAckPending: 100})
	var mu sync.Mutex
	var order []string
	var lane *inflight.Lane
	stop, _ := consume(t, rt, cons, func(_ context.Context, l *inflight.Lane, msgs []jetstream.Msg) {
		for _, m := range msgs {
			mu.Lock()
			order = append(order, "msg "+string(m.Data()))
			lane = l
			mu.Unlock()
			l.Post(func(context.Context) {
				mu.Lock()
				order = append(order, "post "+string(m.Data()))
				mu.Unlock()
				_ = m.Ack()
			})
		}
	})
	require.Eventually(t, func() bool {
		return rt.Held() == 0 && func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 6 }()
	},
		waitFor, 5*time.Millisecond)
	require.NoError(t, stop())
	var posts []string
	for i, o := range order {
		if o[:4] == "post" {
			posts = append(posts, o)
			assert.Contains(t, order[:i], "msg"+o[4:], "%s after its message", o)
		}
	}
	assert.Equal(t, []string{"post 0", "post 1", "post 2"}, posts, "posts in order")
	assert.False(t, lane.Post(func(context.Context) { t.Error("posted work ran after the stop") }), "Post after the stop")
}

// Work posted to a subject runs on the lane of that subject's messages,
// after the message running there; work posted before Consume waits for
// it; once Consume has stopped, the lane's Stopped is closed.
func TestRuntimePostRunsOnTheSubjectsLane(t *testing.T) {
	js, cons := fixture(t, 30*time.Second, 100)
	rt := newRuntime(t, inflight.Config{Name: "c", Lanes: 4, AckWait: 30 * time.Second, MaxAckPending: 100})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, ok := rt.Post(cancelled, "s.x", func(context.Context, *inflight.Lane) { t.Error("posted work ran with no Consume") })
	require.False(t, ok, "Post before Consume, whose wait its context ends")
	early := make(chan int, 1)
	posted := make(chan bool, 1)
	go func() {
		_, ok := rt.Post(t.Context(), "s.x", func(_ context.Context, l *inflight.Lane) { early <- l.Index() })
		posted <- ok
	}()

	running, release := make(chan int, 1), make(chan struct{})
	var mu sync.Mutex
	var order []string
	stop, _ := consume(t, rt, cons, func(_ context.Context, l *inflight.Lane, msgs []jetstream.Msg) {
		for _, m := range msgs {
			running <- l.Index()
			<-release
			mu.Lock()
			order = append(order, "msg")
			mu.Unlock()
			_ = m.Ack()
		}
	})
	select {
	case ok := <-posted:
		require.True(t, ok, "a Post waiting for Consume")
	case <-time.After(waitFor):
		t.Fatalf("a Post waiting for Consume did not return within %s", waitFor)
	}
	var earlyLane int
	select {
	case earlyLane = <-early:
	case <-time.After(waitFor):
		t.Fatalf("the work posted before Consume did not run within %s", waitFor)
	}
	publish(t, js, "s.x", 1)
	var msgLane int
	select {
	case msgLane = <-running:
	case <-time.After(waitFor):
		t.Fatalf("the message was not handled within %s", waitFor)
	}
	assert.Equal(t, msgLane, earlyLane, "the subject's lane")
	ran := make(chan int, 1)
	lane, ok := rt.Post(t.Context(), "s.x", func(_ context.Context, l *inflight.Lane) {
		mu.Lock()
		order = append(order, "post")
		mu.Unlock()
		ran <- l.Index()
	})
	require.True(t, ok)
	assert.Equal(t, msgLane, lane.Index(), "the subject's lane")
	close(release)
	select {
	case i := <-ran:
		assert.Equal(t, msgLane, i)
	case <-time.After(waitFor):
		t.Fatalf("the posted work did not run within %s", waitFor)
	}
	mu.Lock()
	assert.Equal(t, []string{"msg", "post"}, order, "after the message running on its lane")
	mu.Unlock()
	select {
	case <-lane.Stopped():
		t.Fatal("Stopped closed while Consume runs")
	default:
	}

	require.NoError(t, stop())
	select {
	case <-lane.Stopped():
	default:
		t.Fatal("Stopped still open after Consume returned")
	}
	_, ok = rt.Post(cancelled, "s.x", func(context.Context, *inflight.Lane) { t.Error("posted work ran after the stop") })
	assert.False(t, ok, "Post after the stop, whose wait its context ends")
}

// When Consume stops, a message whose handler left it waiting is nak'ed
// for redelivery at once, and so is one queued behind a running handler,
// which never starts; the running handler finishes first.
func TestStopNaksWhatIsStillHeld(t *testing.T) {
	js, cons := fixture(t, 30*time.Second, 100)
	publish(t, js, "s.one", 3)
	var counts inflight.Counters
	counts.Naked, counts.Acked = new(atomic.Uint64), new(atomic.Uint64)
	rt := newRuntime(t, inflight.Config{Name: "c", Lanes: 1, AckWait: 30 * time.Second, MaxAckPending: 100, Counters: counts})
	started := make(chan struct{})
	finish := make(chan struct{})
	var calls atomic.Int32
	var stopping context.Context
	var ready sync.WaitGroup
	ready.Add(1)
	stop, stopping := consume(t, rt, cons, func(_ context.Context, _ *inflight.Lane, msgs []jetstream.Msg) {
		ready.Wait()
		for _, m := range msgs {
			switch calls.Add(1) {
			case 1: // left waiting
			case 2:
				close(started)
				<-finish
				<-stopping.Done() // the third is queued when the stop comes
				_ = m.Ack()
			default:
				t.Error("a message queued at the stop was handled")
			}
		}
	})
	ready.Done()
	<-started
	require.Eventually(t, func() bool { return rt.Held() == 3 }, waitFor, 5*time.Millisecond)
	errc := make(chan error, 1)
	go func() { errc <- stop() }()
	close(finish)
	require.NoError(t, <-errc)
	assert.Equal(t, uint64(1), counts.Acked.Load(), "the running handler finished")
	assert.Equal(t, uint64(2), counts.Naked.Load(), "the waiting and the queued message nak'ed")
	assert.Zero(t, rt.Held())
	// Nak'ed, not left for the 30 s AckWait: a fetch gets them again now.
	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(waitFor))
	require.NoError(t, err)
	var again []uint64
	for m := range batch.Messages() {
		md, err := m.Metadata()
		require.NoError(t, err)
		again = append(again, md.NumDelivered)
	}
	assert.Equal(t, []uint64{2, 2}, again, "the two redelivered")
}

// A redelivery of a message still held (its lease was lost) is not handed
// over again: the held message settles through the newest delivery.
func TestRedeliveryOfAHeldMessageIsNotHandedOverTwice(t *testing.T) {
	// No heartbeat can reach this consumer before its AckWait: the
	// runtime is told AckWait is an hour, the server has 300 ms.
	js, cons := fixture(t, 300*time.Millisecond, 100)
	publish(t, js, "s.x", 1)
	var counts inflight.Counters
	counts.Delivered = new(atomic.Uint64)
	rt := newRuntime(t, inflight.Config{Name: "c", Lanes: 1, AckWait: time.Hour, MaxAckPending: 100, Counters: counts})
	var handed atomic.Int32
	var held atomic.Pointer[inflight.Msg]
	stop, _ := consume(t, rt, cons, func(_ context.Context, _ *inflight.Lane, msgs []jetstream.Msg) {
		handed.Add(1)
		held.Store(msgs[0].(*inflight.Msg))
	})
	require.Eventually(t, func() bool { return counts.Delivered.Load() >= 3 }, waitFor, 5*time.Millisecond, "the server redelivers")
	assert.Equal(t, int32(1), handed.Load(), "handed over once")
	m := held.Load()
	md, err := m.Metadata()
	require.NoError(t, err)
	assert.Greater(t, md.NumDelivered, uint64(1), "its metadata is the newest delivery's")
	require.NoError(t, m.Ack())
	require.Eventually(t, func() bool {
		info, err := cons.Info(t.Context())
		return err == nil && info.NumAckPending == 0 && info.AckFloor.Stream == 1
	}, waitFor, 5*time.Millisecond, "the ack through the newest delivery took")
	require.NoError(t, stop())
}
