package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

// Counts is one snapshot of the live counts, the data of a "counts" event
// of GET /ui/v1/live.
type Counts struct {
	// At is when they were computed, epoch ms.
	At int64 `json:"at"`
	// Total counts every record.
	Total int `json:"total"`
	// Views counts the records of each operator view at At.
	Views map[aggregate.View]int `json:"views"`
	// Due counts the records the scheduler would prepare now (the
	// next-retry view) and OldestDueAge is how long the oldest of them has
	// been due, in ms (0 when none is).
	Due          int   `json:"due"`
	OldestDueAge int64 `json:"oldestDueAge"`
	// Groups are the largest failure groups (function × error code) of
	// the summary, at most MaxGroups; GroupCount counts them all.
	Groups     []api.FailureGroup `json:"groups"`
	GroupCount int                `json:"groupCount"`
}

// MaxGroups bounds the failure groups a counts event carries.
const MaxGroups = 50

// Changed is a record that changed, in a "records" event: the pages
// showing it reload it.
type Changed struct {
	ID      string `json:"id"`
	Version uint64 `json:"version,omitempty"`
}

// maxChangedPerEvent bounds the ids of one "records" event; beyond it the
// event says only that many changed (ids omitted).
const maxChangedPerEvent = 200

// change is one update of the views bucket.
type change struct {
	id      string
	version uint64
}

// hub fans live events out to the open streams.
type hub struct {
	mu       sync.Mutex
	max      int                    // streams at once
	perOwner int                    // streams at once of one principal
	subs     map[chan []byte]string // stream → its owner
	owners   map[string]int         // owner → its streams
	last     []byte                 // the last counts event, sent first to a new stream
	done     bool
}

func newHub(max, perOwner int) *hub {
	return &hub{max: max, perOwner: perOwner, subs: map[chan []byte]string{}, owners: map[string]int{}}
}

// Why a stream was refused.
var (
	errTooManyStreams = errors.New("too many live streams are open; try again later")
	errTooManyOfYours = errors.New("you have too many live streams open; close other dashboard tabs")
	errHubClosed      = errors.New("the live updates have stopped")
)

// subscribe returns a stream of owner's, primed with the last counts, or
// why not: MaxStreams open, MaxStreamsPerPrincipal of owner's open, or the
// hub closed.
func (h *hub) subscribe(owner string) (chan []byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.done:
		return nil, errHubClosed
	case h.owners[owner] >= h.perOwner:
		return nil, errTooManyOfYours
	case len(h.subs) >= h.max:
		return nil, errTooManyStreams
	}
	c := make(chan []byte, 64)
	if h.last != nil {
		c <- h.last
	}
	h.subs[c] = owner
	h.owners[owner]++
	return c, nil
}

func (h *hub) unsubscribe(c chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop(c)
}

// drop closes stream c, if open. The caller holds mu.
func (h *hub) drop(c chan []byte) {
	owner, ok := h.subs[c]
	if !ok {
		return
	}
	delete(h.subs, c)
	if h.owners[owner]--; h.owners[owner] <= 0 {
		delete(h.owners, owner)
	}
	close(c)
}

// publish sends an event to every stream; a stream that has fallen 64
// events behind is closed (the browser reconnects and reloads).
func (h *hub) publish(ev []byte, counts bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if counts {
		h.last = ev
	}
	for c := range h.subs {
		select {
		case c <- ev:
		default:
			h.drop(c)
		}
	}
}

// close ends every stream.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	for c := range h.subs {
		close(c)
	}
	clear(h.subs)
	clear(h.owners)
}

// sse formats one server-sent event.
func sse(name string, v any) []byte {
	data, _ := json.Marshal(v) // plain structs: cannot fail
	return []byte("event: " + name + "\ndata: " + string(data) + "\n\n")
}

// counts computes the live counts from the index.
func (d *Dashboard) counts() (Counts, error) {
	now := d.cfg.Clock.Now()
	sum, err := d.cfg.Index.Summary(api.Filter{Now: now})
	if err != nil {
		return Counts{}, err
	}
	c := Counts{At: now.UnixMilli(), Total: sum.Total, Views: sum.Views, Due: sum.Views[aggregate.ViewNextRetry],
		Groups: sum.Groups[:min(len(sum.Groups), MaxGroups)], GroupCount: len(sum.Groups)}
	if c.Groups == nil {
		c.Groups = []api.FailureGroup{}
	}
	if due := d.cfg.Index.Due(now, 1); len(due) == 1 {
		c.OldestDueAge = max(0, now.UnixMilli()-due[0].NextRetryAt)
	}
	return c, nil
}

// liveLoop recomputes the counts after changes (gathered for Debounce) and
// every Refresh, and publishes them when they differ from the last ones.
// The counts are computed once for every open stream; a computation that
// took t waits at least 3t before the next, so that on a large index under
// constant change the summary costs at most a quarter of a core.
func (d *Dashboard) liveLoop(ctx context.Context, changes <-chan change) {
	defer d.hub.close()
	tick := time.NewTicker(d.cfg.Refresh)
	defer tick.Stop()
	var last Counts
	var pending []change
	var debounce <-chan time.Time
	gap := d.cfg.Debounce
	publish := func(force bool) {
		start := time.Now()
		defer func() { gap = max(d.cfg.Debounce, 3*time.Since(start)) }()
		if len(pending) > 0 {
			// The index applies the bucket's updates in order: once it
			// holds the last one seen, it holds them all.
			p := pending[len(pending)-1]
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = d.cfg.Index.WaitFor(wctx, p.id, p.version)
			cancel()
			ids := make([]Changed, 0, min(len(pending), maxChangedPerEvent))
			seen := map[string]bool{}
			for i := len(pending) - 1; i >= 0 && len(ids) < maxChangedPerEvent; i-- {
				if !seen[pending[i].id] {
					seen[pending[i].id] = true
					ids = append(ids, Changed{ID: pending[i].id, Version: pending[i].version})
				}
			}
			d.hub.publish(sse("records", map[string]any{"records": ids, "count": len(pending)}), false)
			pending = pending[:0]
		}
		c, err := d.counts()
		if err != nil {
			return
		}
		if force || c.Total != last.Total || c.Due != last.Due || c.OldestDueAge/1000 != last.OldestDueAge/1000 || !maps.Equal(c.Views, last.Views) || !slices.Equal(c.Groups, last.Groups) {
			last = c
			d.hub.publish(sse("counts", c), true)
		}
	}
	publish(true)
	for {
		select {
		case <-ctx.Done():
			return
		case ch := <-changes:
			pending = append(pending, ch)
			if debounce == nil {
				debounce = time.After(gap)
			}
		case <-debounce:
			debounce = nil
			publish(false)
		case <-tick.C:
			if debounce == nil {
				publish(false)
			}
		}
	}
}

// watch follows the views bucket's updates into changes until ctx ends,
// restarting a watch that fails after a capped backoff.
func (d *Dashboard) watch(ctx context.Context, changes chan<- change) {
	wait.Restart(ctx, 100*time.Millisecond, 10*time.Second, func(ctx context.Context) error { return d.watchOnce(ctx, changes) },
		func(err error, _ int, backoff time.Duration) bool {
			d.log.Warn("dashboard: the watch of the views bucket stopped; restarting it", "err", err, "backoff", backoff)
			return true
		})
}

// versionOnly reads a stored view's version.
type versionOnly struct {
	Version uint64 `json:"version"`
}

func (d *Dashboard) watchOnce(ctx context.Context, changes chan<- change) error {
	w, err := d.cfg.Changes.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	return kvwatch.Follow(ctx, w, func(e jetstream.KeyValueEntry) {
		_, id, err := projection.ParseKey(e.Key())
		if err != nil {
			return
		}
		c := change{id: id}
		if e.Operation() == jetstream.KeyValuePut {
			var v versionOnly
			if json.Unmarshal(e.Value(), &v) == nil {
				c.version = v.Version
			}
		}
		select {
		case changes <- c:
		case <-ctx.Done():
		}
	})
}

// live streams the counts and the changed records as server-sent events:
// the last counts at once, then every change, with a comment every 15s to
// keep proxies from closing the stream.
func (d *Dashboard) live(w http.ResponseWriter, r *http.Request) {
	if !checkQuery(w, r) {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "NoStreaming", "this connection cannot stream events", nil)
		return
	}
	owner := ""
	if who, ok := server.RequesterFrom(r.Context()); ok {
		owner = who.Name
	}
	c, err := d.hub.subscribe(owner)
	if err != nil {
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable, "TooManyStreams", err.Error(), map[string]any{"max": d.cfg.MaxStreams, "perPrincipal": d.cfg.MaxStreamsPerPrincipal})
		return
	}
	defer d.hub.unsubscribe(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("retry: 3000\n\n"))
	fl.Flush()
	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-c:
			if !ok {
				return
			}
			if _, err := w.Write(ev); err != nil {
				return
			}
			fl.Flush()
		case <-heartbeat.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
