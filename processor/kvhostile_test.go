package processor_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/quarantine"
)

// kvQuarantined returns the quarantine's entries of bucket's keys.
func kvQuarantined(t *testing.T, e *env, bucket string) map[string]quarantine.Entry {
	t.Helper()
	q, err := quarantine.New(e.js)
	require.NoError(t, err)
	all, err := q.All(t.Context(), quarantine.Query{Consumer: bucket})
	require.NoError(t, err)
	out := map[string]quarantine.Entry{}
	for _, x := range all {
		out[x.Key] = x
	}
	return out
}

func putRaw(t *testing.T, e *env, bucket, key string, value []byte) uint64 {
	t.Helper()
	ack, err := e.js.Publish(t.Context(), "$KV."+bucket+"."+key, value)
	require.NoError(t, err)
	return ack.Sequence
}

// progressValue returns the raw progress stored under key ("" if none).
func progressValue(t *testing.T, e *env, key string) string {
	t.Helper()
	kv, err := e.js.KeyValue(t.Context(), processor.ProgressBucket)
	require.NoError(t, err)
	x, err := kv.Get(t.Context(), key)
	if err != nil {
		return ""
	}
	return string(x.Value())
}

// Finding 4 (first round): a progress written far ahead of its aggregate
// (a hand edit, a bad migration) made the Ordered function skip the
// aggregate's next events as done. Finding 5 of "derived state never
// outranks the event store": such a progress, or one that does not read
// ("abc", "-1"), then left the event unacked and redelivered for ever
// with no hold listed. The consumer tells what the progress cannot: a
// version delivered for the first time after every earlier one was acked
// runs, once, and its progress is written over the bad value, which is
// quarantined with the field named.
func TestABadProgressIsWrittenAgainFromTheConsumer(t *testing.T) {
	for _, c := range []struct{ value, quarantined string }{
		{"99", "version: 99 is ahead of the aggregate's last version 3"},
		{"abc", `version: "abc" is not a version`},
		{"-1", `version: "-1" is not a version`},
		{"1", "version: 1 is behind: the consumer acked version 2"},
		// Exactly the version to come: valid, within the aggregate once it
		// is appended, but written before it was.
		{"3", "version: 3 was written at"},
	} {
		t.Run(c.value, func(t *testing.T) {
			s := newSeen()
			e := newEnv(t)
			p1 := e.processor()
			require.NoError(t, p1.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
			stop := run(t, p1)
			e.emit(order("o-1"), 1, ev("step", struct{}{}))
			e.emit(order("o-1"), 2, ev("step", struct{}{}))
			require.Eventually(t, func() bool { return len(s.versions("o-1")) == 2 }, waitFor, tick)
			require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
			stop()

			rev := putRaw(t, e, processor.ProgressBucket, holdKey("o-1"), []byte(c.value))
			p2 := e.processor(processor.WithServerSkew(0)) // one server: its clock only
			require.NoError(t, p2.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
			run(t, p2)
			e.emit(order("o-1"), 3, ev("step", struct{}{}))
			require.Eventually(t, func() bool { return len(s.versions("o-1")) == 3 && progressValue(t, e, holdKey("o-1")) == "3" }, waitFor, tick,
				"version 3 runs, and its progress is written again")
			assert.Equal(t, []uint64{1, 2, 3}, s.versions("o-1"), "version 3 ran once")
			entry, ok := kvQuarantined(t, e, processor.ProgressBucket)[holdKey("o-1")]
			require.True(t, ok, "the bad progress is quarantined")
			assert.Equal(t, rev, entry.Seq)
			assert.Contains(t, entry.Error, c.quarantined)
			require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick, "every message acked")
			e.emit(order("o-1"), 4, ev("step", struct{}{}))
			require.Eventually(t, func() bool { return len(s.versions("o-1")) == 4 }, waitFor, tick)
			assert.Equal(t, []uint64{1, 2, 3, 4}, s.versions("o-1"))
			hs, err := processor.OpenHolds(t.Context(), e.js, 1)
			require.NoError(t, err)
			assert.True(t, noHold(t, hs, "o-1"))
		})
	}
}

// Finding 5: a version delivered before (here: its call was cut short by
// a stop) may have been given to the function, which a bad progress
// cannot tell, nor a progress deleted or purged (amends repair
// purge-entry): run again, as it was, it could be given twice. It is held, in a recovered hold that names the progress,
// acked, and the progress written again; the operator releases it (or
// skips it), and each version is run once, in order.
func TestABadProgressHoldsAVersionDeliveredBefore(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(map[bool]string{false: "abc", true: "purged"}[purge], func(t *testing.T) {
			s := newSeen()
			e := newEnv(t)
			p1 := e.processor(processor.WithShutdownTimeout(0), processor.WithAckWait(300*time.Millisecond))
			require.NoError(t, p1.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
			stop := run(t, p1)
			e.emit(order("o-1"), 1, ev("step", struct{}{}))
			require.Eventually(t, func() bool { return len(s.versions("o-1")) == 1 }, waitFor, tick)
			require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
			if !purge {
				putRaw(t, e, processor.ProgressBucket, holdKey("o-1"), []byte("abc"))
			}
			s.mu.Lock()
			s.gate, s.block = make(chan struct{}), at("o-1", 2)
			s.mu.Unlock()
			e.emit(order("o-1"), 2, ev("step", struct{}{}))
			<-s.in     // version 2 reached the function
			if purge { // as amends repair purge-entry does
				m := nats.NewMsg("$KV." + processor.ProgressBucket + "." + holdKey("o-1"))
				m.Header.Set("KV-Operation", "PURGE")
				m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
				_, err := e.js.PublishMsg(t.Context(), m)
				require.NoError(t, err)
			}
			stop() // and was cut short: unacked, redelivered
			s.mu.Lock()
			s.gate = nil
			s.mu.Unlock()

			p2 := e.processor(processor.WithAckWait(300 * time.Millisecond))
			require.NoError(t, p2.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
			run(t, p2)
			hs, err := processor.OpenHolds(t.Context(), e.js, 1)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return slices.Equal(heldVersions(t, hs, "o-1"), []uint64{2}) }, waitFor, tick, "held")
			h, err := hs.Get(t.Context(), holdKey("o-1"))
			require.NoError(t, err)
			require.NotNil(t, h.Recovered)
			assert.Contains(t, h.Recovered.Reason, "may have been given to the function already")
			require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick, "acked")
			assert.Equal(t, "2h", progressValue(t, e, holdKey("o-1")), "written again, as held")
			e.emit(order("o-1"), 3, ev("step", struct{}{}))
			require.Eventually(t, func() bool { return slices.Equal(heldVersions(t, hs, "o-1"), []uint64{2, 3}) }, waitFor, tick, "held behind it")
			assert.Equal(t, []uint64{1}, s.versions("o-1"))

			_, err = hs.Release(t.Context(), holdKey("o-1"), e.svc, processor.HoldAction{Actor: "ops", Reason: "2 was cut short", Now: e.clock.Now()})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
			assert.Equal(t, []uint64{1, 2, 3}, s.versions("o-1"))
		})
	}
}

// Finding 9: a 1 MB progress value was quoted whole in a warning every
// second. It is quarantined (its reason clipped), and no line of the log
// is long.
func TestAHugeProgressValueIsNotLogged(t *testing.T) {
	s := newSeen()
	e := newEnv(t)
	var log testlog.Buffer
	p := e.processor(processor.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	require.NoError(t, p.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
	run(t, p)
	putRaw(t, e, processor.ProgressBucket, holdKey("o-1"), bytes.Repeat([]byte("7"), 900<<10))
	e.emit(order("o-1"), 1, ev("step", struct{}{}))
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	require.Eventually(t, func() bool {
		x, ok := kvQuarantined(t, e, processor.ProgressBucket)[holdKey("o-1")]
		return ok && strings.Contains(x.Error, "over the limit of 21")
	}, waitFor, tick)
	require.Eventually(t, func() bool { return len(s.versions("o-1")) == 2 }, waitFor, tick, "first deliveries: the progress is written again")
	assert.Equal(t, []uint64{1, 2}, s.versions("o-1"))
	assert.Less(t, log.Longest(), 4096, "no log line quotes the value")
}

// heldHold fails version 1 of o-1 and holds version 2; it returns the
// head's first stream.
func heldHold(t *testing.T, s *seen, e *env, hs *processor.Holds) (head string) {
	t.Helper()
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 1 }, waitFor, tick)
	return aggregate.RecordID(v1.Events[0].ID, projector)
}

// Finding 8: a hold overwritten with garbage, truncated, or deleted lost
// its held events and vanished from holds list. Seen live, it is written
// back from the last valid value and quarantined; nothing held is lost.
func TestADamagedHoldIsRestored(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, e *env)
	}{
		{"garbage", func(t *testing.T, e *env) { putRaw(t, e, processor.HoldBucket, holdKey("o-1"), []byte("garbage")) }},
		{"truncated", func(t *testing.T, e *env) {
			putRaw(t, e, processor.HoldBucket, holdKey("o-1"), []byte(`{"context":"shop","processor":"Projector","function":"onStep","aggreg`))
		}},
		{"empty object", func(t *testing.T, e *env) { putRaw(t, e, processor.HoldBucket, holdKey("o-1"), []byte(`{}`)) }},
		{"deleted", func(t *testing.T, e *env) {
			kv, err := e.js.KeyValue(t.Context(), processor.HoldBucket)
			require.NoError(t, err)
			require.NoError(t, kv.Delete(t.Context(), holdKey("o-1")))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSeen()
			s.failOn("o-1", 1, 1)
			e, _, _, hs := orderedEnv(t, s)
			head := heldHold(t, s, e, hs)
			c.damage(t, e)
			require.Eventually(t, func() bool {
				h, err := hs.Get(t.Context(), holdKey("o-1"))
				return err == nil && h.Recovered == nil && len(h.Held) == 1 && h.Head.Record == head
			}, waitFor, tick, "the hold is written back")
			require.Eventually(t, func() bool {
				_, ok := kvQuarantined(t, e, processor.HoldBucket)[holdKey("o-1")]
				return ok
			}, waitFor, tick, "the damage is quarantined")
			e.emit(order("o-1"), 3, ev("step", struct{}{}))
			require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 2 }, waitFor, tick)
			e.clock.SetMillis(t0 + 1000)
			e.prepare(head, false)
			require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
			assert.Equal(t, []uint64{1, 1, 2, 3}, s.versions("o-1"), "nothing held was lost")
		})
	}
}

// Finding 8: a hold stored as {} (or anything else that does not validate)
// before the processor starts listed as key "...." and could not be
// released. It is replaced by a recovered hold under its own key, listed,
// that holds the aggregate's events until an operator releases it.
func TestAnInvalidHoldAtStartIsRecoveredListedAndReleasable(t *testing.T) {
	s := newSeen()
	e := newEnv(t)
	hs, err := processor.OpenHolds(t.Context(), e.js, 1)
	require.NoError(t, err)
	putRaw(t, e, processor.HoldBucket, holdKey("o-2"), []byte(`{}`))
	list, _, err := hs.List(t.Context(), processor.HoldFilter{}, 10)
	require.NoError(t, err)
	require.Len(t, list, 1, "listed before any processor repaired it")
	assert.Equal(t, holdKey("o-2"), list[0].Key(), "under its own key, not ....")
	require.NotNil(t, list[0].Recovered)

	p := e.processor()
	require.NoError(t, p.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
	run(t, p)
	require.Eventually(t, func() bool {
		h, err := hs.Get(t.Context(), holdKey("o-2"))
		return err == nil && h.Recovered != nil && h.Recovered.Revision != 0
	}, waitFor, tick)
	e.emit(order("o-2"), 1, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-2")) == 1 }, waitFor, tick, "the aggregate's event is held")
	assert.Empty(t, s.versions("o-2"))

	plan, err := hs.Release(t.Context(), holdKey("o-2"), e.svc, processor.HoldAction{Actor: "ops", Reason: "checked o-2", Now: e.clock.Now()})
	require.NoError(t, err)
	assert.Empty(t, plan.Commands, "no head record to resolve")
	require.Eventually(t, func() bool { return noHold(t, hs, "o-2") }, waitFor, tick)
	assert.Equal(t, []uint64{1}, s.versions("o-2"))
}

// Finding 8: a claim of a ghost that ends in the far future froze a
// release for ever (and holds release printed "released"). Such a claim is
// no claim: the release runs, and the claim is quarantined.
func TestAGhostClaimDoesNotFreezeARelease(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	e, _, _, hs := orderedEnv(t, s)
	head := heldHold(t, s, e, hs)
	h, err := hs.Get(t.Context(), holdKey("o-1"))
	require.NoError(t, err)
	e.clock.SetMillis(t0 + 1000)
	_, err = e.svc.Execute(t.Context(), head, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test", Headers: map[string]string{processor.HeaderResolve: "x"}})
	require.NoError(t, err)
	h.Releasing, h.Claim = true, &api.HoldClaim{Owner: "ghost", Until: 9_000_000_000_000_000}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	putRaw(t, e, processor.HoldBucket, holdKey("o-1"), b)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick, "the release runs")
	assert.Contains(t, s.versions("o-1"), uint64(2))
	x, ok := kvQuarantined(t, e, processor.HoldBucket)[holdKey("o-1")]
	require.True(t, ok)
	assert.Contains(t, x.Error, "claim.until")
}

// Finding 8: a hold of more references than the 4 096 it grows to (the
// finding's had 9 000, about 1 MB) was released one event per two
// rewrites of the whole value. While it is over the limit it is released
// a chunk per claim, one rewrite per 64 events.
func TestALargeHoldIsReleasedInChunks(t *testing.T) {
	s := newSeen()
	e, _, _, hs := orderedEnv(t, s)
	h := api.Hold{Context: ctxName, Processor: "Projector", Function: "onStep", AggregateType: "order", AggregateID: "o-9",
		Head:      api.HoldHead{Record: "r-gone", EventID: "e-head", Version: 1, Seq: 1, Since: t0},
		Releasing: true}
	const over = 640
	for i := range processor.MaxHeld + over {
		h.Held = append(h.Held, api.HeldEvent{EventID: fmt.Sprintf("e-%05d", i), Version: uint64(i + 2), Seq: uint64(i + 2), HeldAt: t0})
	}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	first := putRaw(t, e, processor.HoldBucket, h.Key(), b)
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-9")) <= processor.MaxHeld }, 4*waitFor, tick, "released down to the limit")
	stream, err := e.js.Stream(t.Context(), "KV_"+processor.HoldBucket)
	require.NoError(t, err)
	info, err := stream.Info(t.Context())
	require.NoError(t, err)
	writes := info.State.LastSeq - first
	assert.Less(t, writes, uint64(over/64+10), "%d writes to release %d held events", writes, over)
}

// Finding 6 of "derived state never outranks the event store": a hold
// whose head record does not exist held every later event of its
// aggregate, silently, for ever. Once the head's message is acked (its
// recording can no longer succeed) and a grace has passed, it becomes a
// recovered hold: its head's event held
// first (nothing lost), the reason shown, the value quarantined with the
// field named; an operator skips what was handled and releases the rest.
func TestAHoldWhoseHeadRecordDoesNotExistIsRecoveredAndReleasable(t *testing.T) {
	s := newSeen()
	e := newEnv(t)
	p1 := e.processor()
	require.NoError(t, p1.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
	stop := run(t, p1)
	v1 := e.emit(order("o-4"), 1, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(s.versions("o-4")) == 1 }, waitFor, tick, "version 1 handled, no hold")
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
	stop()
	hs, err := processor.OpenHolds(t.Context(), e.js, 1)
	require.NoError(t, err)
	// A raw NATS client writes a hold on version 1, whose failure was never
	// recorded.
	forged := api.Hold{Context: ctxName, Processor: "Projector", Function: "onStep", AggregateType: "order", AggregateID: "o-4",
		Head: api.HoldHead{Record: aggregate.RecordID(v1.Events[0].ID, projector), EventID: v1.Events[0].ID, Version: 1, Seq: v1.Seq,
			Since: e.clock.Now().UnixMilli()}}
	raw, err := json.Marshal(forged)
	require.NoError(t, err)
	rev := putRaw(t, e, processor.HoldBucket, holdKey("o-4"), raw)
	p2 := e.processor() // it loads the hold before it takes a message
	require.NoError(t, p2.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
	run(t, p2)
	e.emit(order("o-4"), 2, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return slices.Equal(heldVersions(t, hs, "o-4"), []uint64{2}) }, waitFor, tick, "held behind the forged head")

	e.clock.SetMillis(e.clock.Now().Add(2 * time.Minute).UnixMilli()) // past the grace; the head's message was acked long ago
	require.Eventually(t, func() bool {
		h, err := hs.Get(t.Context(), holdKey("o-4"))
		return err == nil && h.Recovered != nil
	}, waitFor, tick, "recovered")
	h, err := hs.Get(t.Context(), holdKey("o-4"))
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2}, heldVersions(t, hs, "o-4"), "its head's event held first")
	assert.Greater(t, h.Recovered.Revision, rev, "the revision it replaced: the forged one with version 2 held")
	assert.Contains(t, h.Recovered.Reason, "does not exist in the event store")
	list, _, err := hs.List(t.Context(), processor.HoldFilter{}, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.NotNil(t, list[0].Recovered, "listed with its reason")
	require.Eventually(t, func() bool {
		return strings.Contains(kvQuarantined(t, e, processor.HoldBucket)[holdKey("o-4")].Error, "head.record")
	}, waitFor, tick, "quarantined, the field named")
	assert.Equal(t, []uint64{1}, s.versions("o-4"), "nothing run meanwhile")

	act := processor.HoldAction{Actor: "ops", Reason: "version 1 was handled", Now: e.clock.Now()}
	_, err = hs.Skip(t.Context(), holdKey("o-4"), v1.Events[0].ID, act)
	require.NoError(t, err)
	_, err = hs.Release(t.Context(), holdKey("o-4"), e.svc, act)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-4") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 2}, s.versions("o-4"), "each version once, in order")
}
