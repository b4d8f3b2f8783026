package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/projection/index"
)

// ErrInvalidConfig is wrapped by New's errors.
var ErrInvalidConfig = errors.New("dashboard: invalid config")

// Index is what the dashboard reads of the read model. *projection.Index
// satisfies it.
type Index interface {
	Get(ctx context.Context, id string) (api.View, error)
	Summary(f api.Filter) (api.Summary, error)
	Due(now time.Time, limit int) []index.Due
	WaitFor(ctx context.Context, id string, version uint64) error
}

// Events reads original events. *jsstore.Store satisfies it.
type Events interface {
	eventstore.Locator
}

// Config is what a Dashboard shows.
type Config struct {
	// Index and Events are required.
	Index  Index
	Events Events
	// Changes is the views bucket (projection.OpenViews): its updates wake
	// the live counts at once. Nil: the counts refresh every Refresh only.
	Changes jetstream.KeyValue
	// Clock gives now (default the system clock).
	Clock aggregate.Clock
	// Logger receives the change watch's restarts (default slog.Default()).
	Logger *slog.Logger
	// Refresh is how often the live counts are recomputed without a change
	// (views move with time); default 5s.
	Refresh time.Duration
	// Debounce gathers changes for this long before recomputing; default
	// 250ms.
	Debounce time.Duration
	// Sample is the backlog's sampling period (default 1 minute); the
	// trend keeps the last hour's worth of samples at the default.
	Sample time.Duration
	// MaxStreams bounds the live streams open at once (default 64), and
	// MaxStreamsPerPrincipal those of one principal (default 8), so that
	// one client cannot take them all; more are answered 503.
	MaxStreams             int
	MaxStreamsPerPrincipal int
	// Audit, if set, records every read of an original event (who read
	// which record's payload, from where) before the event is sent; a read
	// that cannot be recorded is answered 503, never sent unrecorded.
	// *audit.Log satisfies it.
	Audit Auditor
}

// Auditor records audit entries.
type Auditor interface {
	Record(ctx context.Context, e api.AuditEntry) error
}

// Dashboard serves the pages and the browser-only data. It implements
// server.Dashboard. Run it to keep the live counts and the backlog trend;
// its handlers are safe for concurrent use.
type Dashboard struct {
	cfg   Config
	log   *slog.Logger
	data  *http.ServeMux
	hub   *hub
	trend *trend

	runOnce sync.Once
}

// New returns a Dashboard for cfg; the error wraps ErrInvalidConfig.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Index == nil || cfg.Events == nil {
		return nil, fmt.Errorf("index and events are required: %w", ErrInvalidConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = aggregate.ClockFunc(time.Now)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 250 * time.Millisecond
	}
	if cfg.Sample <= 0 {
		cfg.Sample = time.Minute
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 64
	}
	if cfg.MaxStreamsPerPrincipal <= 0 {
		cfg.MaxStreamsPerPrincipal = 8
	}
	d := &Dashboard{cfg: cfg, log: cfg.Logger, data: http.NewServeMux(), trend: newTrend(trendSamples)}
	d.hub = newHub(cfg.MaxStreams, min(cfg.MaxStreamsPerPrincipal, cfg.MaxStreams))
	d.data.HandleFunc("GET /ui/v1/live", d.live)
	d.data.HandleFunc("GET /ui/v1/backlog", d.backlog)
	d.data.HandleFunc("GET /ui/v1/records/{id}/event", d.event)
	d.data.HandleFunc("GET /ui/v1/records/{id}/schedule", d.schedule)
	d.data.HandleFunc("GET /ui/v1/records/{id}/actions", d.actions)
	d.data.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", "no dashboard data at "+clip(r.URL.Path), nil)
	})
	return d, nil
}

// ServeData serves GET /ui/v1/...; the server has checked the role.
func (d *Dashboard) ServeData(w http.ResponseWriter, r *http.Request) {
	secure(w)
	d.data.ServeHTTP(w, r)
}

// Run keeps the live counts and the backlog trend until ctx ends, then
// closes every live stream and returns nil once everything it started has
// stopped. Call it once.
func (d *Dashboard) Run(ctx context.Context) error {
	ran := false
	d.runOnce.Do(func() { ran = true })
	if !ran {
		return fmt.Errorf("dashboard: Run was called twice: %w", ErrInvalidConfig)
	}
	var wg sync.WaitGroup
	changes := make(chan change, 1024)
	if d.cfg.Changes != nil {
		wg.Go(func() { d.watch(ctx, changes) })
	}
	wg.Go(func() { d.sampleLoop(ctx) })
	d.liveLoop(ctx, changes)
	wg.Wait()
	return nil
}
