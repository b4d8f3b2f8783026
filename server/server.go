package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/kvstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rules"
)

// Queries is what the server reads. *projection.Index satisfies it.
type Queries interface {
	Get(ctx context.Context, id string) (projection.View, error)
	List(q projection.Query) (projection.Page, error)
	Count(f projection.Filter) (int, error)
	Summary(f projection.Filter) (projection.Summary, error)
	History(ctx context.Context, id string) ([]projection.Change, error)
	WaitFor(ctx context.Context, id string, version uint64) error
}

// Commands executes commands. *aggregate.Service satisfies it.
type Commands interface {
	Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error)
}

// Config is what a Server serves.
type Config struct {
	// Queries and Commands are required.
	Queries  Queries
	Commands Commands
	// Rules keeps the operators' rules (GET/POST /api/v1/rules); nil
	// answers those routes 404.
	Rules *rules.Store
	// Batches keeps batch results by request id, for idempotency. Required
	// for batch runs; see OpenBatches.
	Batches jetstream.KeyValue
	// Tokens authenticate requests; none means every request is the local
	// operator (see CheckBind).
	Tokens []Token
	// Quarantine lists the messages consumers quarantined (GET
	// /api/v1/quarantine); nil answers that route 404.
	Quarantine QuarantineLister
	// Ready reports whether the server can answer (NATS connected, index
	// loaded); nil means always.
	Ready func() error
	// Registry receives the server's metrics and is served at /metrics;
	// nil means a new registry.
	Registry *prometheus.Registry
	// Clock is the time dry runs decide at (default the system clock).
	Clock aggregate.Clock
	// Logger receives request failures (default slog.Default()).
	Logger *slog.Logger
	// MaxBatch bounds the records of one batch (default 10000).
	MaxBatch int
	// Dashboard, if set, is served at / next to the API, with sign-in
	// sessions (see Dashboard).
	Dashboard Dashboard
	// Ordering serves the holds and range replays of Ordered functions;
	// nil answers their routes 404.
	Ordering *Ordering
	// ReadYourWrites bounds how long a command response waits for the index
	// to reach the new version, so a list right after it sees the change
	// (default 2s; negative disables).
	ReadYourWrites time.Duration
	// TracerProvider receives a span per request (default
	// otel.GetTracerProvider()), a child of the caller's W3C trace context,
	// carrying the record id of a record's routes; the commands a request
	// sends carry its trace to the compensation stream.
	TracerProvider trace.TracerProvider
}

// Server is the HTTP control plane. Its handler is safe for concurrent use.
type Server struct {
	cfg  Config
	log  *slog.Logger
	keys *keyring
	// sessions are the dashboard's signed-in browsers.
	sessions *sessions
	mux      *http.ServeMux
	metrics  *httpMetrics
	routes   []route

	// batchStore is Config.Batches through the KV layer (batches).
	batchOnce  sync.Once
	batchStore *kvstore.Store[batchEntry]
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Clock == nil {
		cfg.Clock = aggregate.ClockFunc(time.Now)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 10000
	}
	if cfg.ReadYourWrites == 0 {
		cfg.ReadYourWrites = 2 * time.Second
	}
	s := &Server{cfg: cfg, log: cfg.Logger, keys: newKeyring(cfg.Tokens), sessions: newSessions(time.Now), mux: http.NewServeMux()}
	s.metrics = newHTTPMetrics(cfg.Registry)
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// route is one endpoint.
type route struct {
	method, pattern string
	// role is the least role it needs; "" means no authentication.
	role    Role
	handler func(w http.ResponseWriter, r *http.Request, p principal) error
	// fallback routes only explain a mistake (an unknown command); the
	// OpenAPI document leaves them out.
	fallback bool
}

// wrap authenticates, times and reports errors of a route.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			s.metrics.observe(rt.method, rt.pattern, strconv.Itoa(sw.status), time.Since(start))
		}()
		r, span := s.startSpan(r, rt) // tracing.go
		defer func() { endSpan(span, sw.status) }()
		p := principal{}
		if rt.role != "" {
			var ok bool
			if p, ok = s.authorize(sw, r, rt.role); !ok {
				return
			}
		}
		if err := rt.handler(sw, r, p); err != nil {
			s.writeError(sw, r, err)
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush lets streamed responses reach the client.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// noRoute answers a request no route takes: 405 with Allow if the path has
// routes for other methods, 404 otherwise.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	if allow := s.allowed(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, Error{Code: "MethodNotAllowed",
			Message: fmt.Sprintf("%s is not allowed on %s; use %s", cut(r.Method), cut(r.URL.Path), strings.Join(allow, " or ")),
			Details: map[string]any{"allow": allow}})
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/records/"); ok && r.Method == http.MethodPost {
		if _, name, ok := strings.Cut(rest, "/"); ok && !strings.Contains(name, "/") {
			writeJSON(w, http.StatusNotFound, Error{Code: "NotFound",
				Message: "unknown command " + quote(name) + "; the commands are " + strings.Join(OperatorCommands, ", "), Details: map[string]any{"field": "command"}})
			return
		}
	}
	writeJSON(w, http.StatusNotFound, Error{Code: "NotFound", Message: "no route " + cut(r.Method) + " " + cut(r.URL.Path) + "; the API is described at /api/v1/openapi.json"})
}

// allowed lists the methods that have a route for r's path.
func (s *Server) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}
