package projection_test

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

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
)

// versionWatch records, from a watch of the views bucket, every version
// each view was written at, and whether any went backwards.
type versionWatch struct {
	mu        sync.Mutex
	last      map[string]uint64
	backwards []string
}

func watchVersions(t *testing.T, views jetstream.KeyValue) *versionWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := views.WatchAll(ctx, jetstream.UpdatesOnly())
	require.NoError(t, err)
	vw := &versionWatch{last: map[string]uint64{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.Updates() {
			if e == nil || e.Operation() != jetstream.KeyValuePut || !strings.Contains(e.Key(), ".") {
				continue // not a view: a deletion, or a processor's key
			}
			var v api.View
			err := json.Unmarshal(e.Value(), &v)
			vw.mu.Lock()
			switch {
			case err != nil:
				vw.backwards = append(vw.backwards, e.Key()+": "+err.Error())
			case v.Version <= vw.last[e.Key()]:
				vw.backwards = append(vw.backwards, e.Key()+": written at a version not above the last")
			}
			vw.last[e.Key()] = v.Version
			vw.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = w.Stop(); cancel(); <-done })
	return vw
}

// A projector killed mid-stream (its connection closed while its batches'
// writes and acks are in flight) and a new one taking over leave every
// view equal to its record's last version, each view only ever written at
// increasing versions, and every message acknowledged.
func TestKilledPipelinedProjectorLeavesEveryViewAtItsLastVersion(t *testing.T) {
	const records, versions = 300, 3
	e := newEnv(t)
	vw := watchVersions(t, e.views)

	nc, js := e.srv.Connect()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	views, err := projection.OpenViews(t.Context(), js)
	require.NoError(t, err)
	first, err := projection.NewProjector(js, store, views, projection.WithAckWait(time.Second), projection.WithWorkers(4))
	require.NoError(t, err)
	stopFirst := run(t, first)

	want := map[string]uint64{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < records; i += 4 {
				id := e.create(t, evt(i), fnA, "E", nil)
				for v := 2; v <= versions; v++ {
					e.exec(t, id, aggregate.ApplyRetrySpec{MaxRetries: int32(v), MinBackoff: 1, ExecutionTimeout: 1})
				}
				mu.Lock()
				want[id] = versions
				mu.Unlock()
			}
		})
	}
	require.Eventually(t, func() bool { return first.Stats().Projected >= records }, 30*time.Second, time.Millisecond, "the first projector got going")
	nc.Close() // killed: whatever it holds is redelivered after the AckWait
	stopFirst()
	wg.Wait()

	second := e.projector(t, projection.WithAckWait(time.Second))
	run(t, second)
	assertViewsMatchAggregate(t, e, want)
	e.drained(t)
	vw.mu.Lock()
	defer vw.mu.Unlock()
	assert.Empty(t, vw.backwards, "views went backwards")
	assert.Len(t, vw.last, records)
	s1, s2 := first.Stats(), second.Stats()
	t.Logf("first %+v second %+v", s1, s2)
	assert.Less(t, s1.Projected+s1.Rebuilt, uint64(records*versions), "the first projector was killed before the end: %+v", s1)
	assert.GreaterOrEqual(t, s1.Projected+s1.Rebuilt+s2.Projected+s2.Rebuilt+s2.Skipped, uint64(records*versions), "every stream handled: %+v %+v", s1, s2)
}
