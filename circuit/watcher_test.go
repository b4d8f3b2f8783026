package circuit_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/quarantine"
)

// quarantinedStore is a circuits bucket whose refusals go to the returned
// quarantine.
func quarantinedStore(t *testing.T) (*circuit.Store, *quarantine.Quarantine) {
	t.Helper()
	js := natstest.New(t).JetStream()
	q, err := quarantine.New(js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	store, err := circuit.OpenStore(t.Context(), js, circuit.WithStorage(jetstream.MemoryStorage), circuit.WithQuarantine(q))
	require.NoError(t, err)
	return store, q
}

// Finding 8 of "derived state never outranks the event store": the
// circuit watcher quarantined nothing (only circuits show did) and
// replayed every old revision on start-up. It applies each key's last
// revision only, and quarantines a circuit that does not validate, once
// per revision, with the field named, at start-up and at run time.
func TestTheWatcherLoadsLastRevisionsAndQuarantinesBadOnes(t *testing.T) {
	store, q := quarantinedStore(t)
	f := circuit.Function{Context: "shop", Processor: "Mailer", Name: "onOrder"}
	var last uint64
	for i, to := range []circuit.Phase{circuit.Open, circuit.Closed, circuit.Open} {
		_, rev, changed, err := store.Update(t.Context(), f, func(s circuit.State) (circuit.State, bool) {
			return circuit.Evolve(s, time.Now(), circuit.Policy{}, circuit.OperatorSet{To: to, Actor: "ops", Reason: "step " + string(rune('1'+i))})
		})
		require.NoError(t, err)
		require.True(t, changed)
		last = rev
	}
	bad := circuit.Function{Context: "shop", Processor: "Mailer", Name: "onRefund"}
	put := func(raw string) uint64 {
		rev, err := store.KV().Put(t.Context(), bad.String(), []byte(raw))
		require.NoError(t, err)
		return rev
	}
	first := put(`{"function":{"context":"shop","processor":"Mailer","name":"onRefund"},"phase":"AJAR"}`)

	var mu sync.Mutex
	seen := map[string][]uint64{}
	w := store.Watcher("", nil, func(s circuit.State, rev uint64) {
		mu.Lock()
		seen[s.Function.String()] = append(seen[s.Function.String()], rev)
		mu.Unlock()
	})
	done := make(chan error, 1)
	go func() { done <- w.Run(t.Context()) }()
	<-w.Ready()
	mu.Lock()
	assert.Equal(t, map[string][]uint64{f.String(): {last}}, seen, "each key's last revision only")
	mu.Unlock()
	st, ok := w.Get(f)
	require.True(t, ok)
	assert.Equal(t, circuit.Open, st.Phase)

	quarantined := func(rev uint64) *quarantine.Entry {
		all, err := q.All(t.Context(), quarantine.Query{})
		require.NoError(t, err)
		for _, e := range all {
			if e.Key == bad.String() && e.Seq == rev {
				return &e
			}
		}
		return nil
	}
	require.NotNil(t, quarantined(first), "quarantined at start-up")
	assert.Contains(t, quarantined(first).Error, "phase")
	second := put(`{"function":{"context":"shop","processor":"Mailer","name":"onRefund"},"phase":"OPEN","since":-5}`)
	require.Eventually(t, func() bool { return quarantined(second) != nil }, 30*time.Second, 5*time.Millisecond, "and at run time")
	all, err := q.All(t.Context(), quarantine.Query{})
	require.NoError(t, err)
	n := 0
	for _, e := range all {
		if strings.HasPrefix(e.Key, bad.String()) {
			n++
		}
	}
	assert.Equal(t, 2, n, "once per revision")
	_, ok = w.Get(bad)
	assert.False(t, ok, "a bad circuit reads as closed")
}

// Finding 8: a forced-open circuit written into the bucket by hand acted
// (every call refused as CircuitOpen) with no operator named anywhere. An
// operator's open keeps its transition, with the actor, last; a forced
// circuit without one is refused (quarantined, the field named) and its
// function's calls go on as if it were closed.
func TestAForcedCircuitWithoutItsOperatorIsRefused(t *testing.T) {
	store, q := quarantinedStore(t)
	f := circuit.Function{Context: "shop", Processor: "Mailer", Name: "onOrder"}
	now := time.Now()
	forced, changed := circuit.Evolve(circuit.New(f), now, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "smtp down"})
	require.True(t, changed)
	_, changed = circuit.Evolve(circuit.New(f), now, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Reason: "no one"})
	assert.False(t, changed, "an operator without a name changes nothing")

	for name, edit := range map[string]func(s *circuit.State){
		"no transition":       func(s *circuit.State) { s.Transitions = nil },
		"an operator unnamed": func(s *circuit.State) { s.Transitions[len(s.Transitions)-1].Actor = "" },
		"not by an operator":  func(s *circuit.State) { s.Transitions[len(s.Transitions)-1].Cause = circuit.CauseConsecutive },
	} {
		t.Run(name, func(t *testing.T) {
			s := forced
			s.Transitions = append([]circuit.Transition(nil), forced.Transitions...)
			edit(&s)
			raw, err := json.Marshal(s)
			require.NoError(t, err)
			_, err = circuit.DecodeState(f.String(), raw, now)
			require.ErrorIs(t, err, circuit.ErrInvalid)
			rev, err := store.KV().Put(t.Context(), f.String(), raw)
			require.NoError(t, err)
			w := store.Watcher("", nil, nil)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() { _ = w.Run(ctx) }()
			<-w.Ready()
			_, ok := w.Get(f)
			assert.False(t, ok, "refused: the function reads as closed")
			all, err := q.All(t.Context(), quarantine.Query{})
			require.NoError(t, err)
			var why string
			for _, e := range all {
				if e.Seq == rev {
					why = e.Error
				}
			}
			assert.NotEmpty(t, why, "quarantined")
		})
	}
	raw, err := json.Marshal(forced)
	require.NoError(t, err)
	_, err = circuit.DecodeState(f.String(), raw, now)
	require.NoError(t, err, "an operator's open reads")
}
