package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rules"
)

// Queries is what the server reads. *projection.Index satisfies it.
type Queries interface {
	Get(ctx context.Context, id string) (api.View, error)
	List(q api.Query) (api.Page, error)
	Count(f api.Filter) (int, error)
	Summary(f api.Filter) (api.Summary, error)
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
	// Tokens authenticate requests; none (and no OIDC) means every request
	// is the local operator (see CheckBind). SetTokens replaces them.
	Tokens []Token
	// OIDC, if set, also accepts the issuer's JWTs as bearer tokens and
	// lets the dashboard sign in through the issuer (see OIDCConfig).
	OIDC *OIDCConfig
	// Sessions is the KV bucket of dashboard sessions (OpenSessions),
	// shared by every server of a deployment so that a session survives a
	// restart and works on each; Run watches it. Nil keeps sessions in
	// this process's memory.
	Sessions jetstream.KeyValue
	// AuthLimits bound failed authentications per client address and
	// sign-ins per principal (zero fields: DefaultAuthLimits).
	AuthLimits AuthLimits
	// Audit receives failed authentications, clients over their budget,
	// sign-ins and sign-outs, and serves GET /api/v1/audit; nil records
	// nothing (and answers that route 404).
	Audit AuditLog
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
	// Circuits serves the functions' circuits and the recovery drains;
	// nil answers their routes 404.
	Circuits *Circuits
	// Archive serves the records retention archived, and restores them;
	// nil answers its routes 404.
	Archive *Archive
	// Retired, if set, adds the records retention removed to summaries
	// filtered by function, error code and fingerprint (retired.go).
	Retired Retired
	// ReadYourWrites bounds how long a command response waits for the index
	// to reach the new version, so a list right after it sees the change
	// (default 2s; negative disables).
	ReadYourWrites time.Duration
	// AllowedHosts are the host names the server answers to in the Host
	// header, besides IP addresses and "localhost" (always allowed):
	// exact names, "*.example.com" for the names below example.com, or
	// "*" for any (see CheckAllowedHost). A request naming another host is
	// a 421, the defence against DNS rebinding.
	AllowedHosts []string
	// TrustedProxies are the peers (TLS-terminating proxies, load
	// balancers) whose X-Forwarded-For and X-Forwarded-Proto headers the
	// server believes: the client's address for rate limits and the audit,
	// and whether it came over TLS (Secure cookies, HSTS). Nil trusts no
	// peer's forwarding headers.
	TrustedProxies []netip.Prefix
	// BodyTimeout bounds how long a request body may take to arrive once
	// its handler reads it (default DefaultBodyTimeout); a slower one is a
	// 408 and its connection closes.
	BodyTimeout time.Duration
	// TracerProvider receives a span per request (default
	// otel.GetTracerProvider()), a child of the caller's W3C trace context,
	// carrying the record id of a record's routes; the commands a request
	// sends carry its trace to the compensation stream.
	TracerProvider trace.TracerProvider
}

// AuditLog keeps the audit trail of security events; *audit.Log satisfies
// it.
type AuditLog interface {
	Record(ctx context.Context, e api.AuditEntry) error
	Query(ctx context.Context, q audit.Query) (audit.Page, error)
}

// Server is the HTTP control plane. Its handler is safe for concurrent use.
type Server struct {
	cfg  Config
	log  *slog.Logger
	keys atomic.Pointer[keyring]
	// open: the server started with no tokens and no OIDC (the loopback
	// local mode, checked at start-up only); it stays open only while it
	// has no tokens, and a server that authenticates never becomes open.
	open bool
	// refusedTokens counts the token changes SetTokens refused.
	refusedTokens atomic.Uint64
	// sessions are the dashboard's signed-in browsers.
	sessions *sessions
	// requests are the authenticated requests in flight.
	requests *liveRequests
	limits   *authLimiter
	oidc     *oidcAuth
	mux      *http.ServeMux
	hosts    *hostList
	metrics  *httpMetrics
	routes   []route
	runOnce  sync.Once

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
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	s := &Server{cfg: cfg, log: cfg.Logger, requests: newLiveRequests(), limits: newAuthLimiter(cfg.AuthLimits),
		mux: http.NewServeMux(), hosts: newHostList(cfg.AllowedHosts)}
	s.keys.Store(newKeyring(cfg.Tokens))
	s.open = len(cfg.Tokens) == 0 && cfg.OIDC == nil
	var store *sessionStore
	if cfg.Sessions != nil {
		var opts []kvstore.Option
		if r, ok := cfg.Quarantine.(kvstore.Recorder); ok {
			opts = append(opts, kvstore.WithRecorder(r))
		}
		opts = append(opts, kvstore.WithLogger(cfg.Logger), kvstore.WithClock(cfg.Clock.Now))
		store = &sessionStore{st: kvstore.For(kvstore.Bind(nil, cfg.Sessions, SessionSpec(1), opts...), sessionCodec), log: cfg.Logger}
	}
	s.sessions = newSessions(s.now, store, s.requests.end)
	if cfg.OIDC != nil {
		s.oidc = newOIDCAuth(*cfg.OIDC, cfg.Logger)
	}
	s.metrics = newHTTPMetrics(cfg.Registry)
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// now is the server's time.
func (s *Server) now() time.Time { return s.cfg.Clock.Now() }

// Run keeps the server's shared state until ctx ends: it follows the
// session bucket (Config.Sessions), so that a sign-in or sign-out on
// another server shows here at once and a sign-out there ends this
// server's live streams of the session, and drops expired sessions from
// memory every minute. It returns nil once everything it started has
// stopped. A server that is not run still works; its sessions are then
// those it made or read from the bucket itself. Call it once.
func (s *Server) Run(ctx context.Context) error {
	ran := false
	s.runOnce.Do(func() { ran = true })
	if !ran {
		return errors.New("server: Run was called twice")
	}
	var wg sync.WaitGroup
	if st := s.sessions.store; st != nil {
		wg.Go(func() { st.watch(ctx, s.sessions) })
	}
	wait.Every(ctx, time.Minute, s.sessions.sweep)
	wg.Wait()
	return nil
}

// SetTokens replaces the tokens the server accepts, at once. A token that
// is gone, or whose secret, role or expiry changed, is revoked: its
// sessions end (on every server sharing the session bucket) and its
// requests in flight, live streams included, are cancelled. No tokens on
// a server that authenticates by tokens only (not OIDC) would leave it
// nothing to authenticate by, and the tokenless mode is a start-up
// decision: that change is refused, the tokens kept, counted
// (RefusedTokenChanges), and the error matches ErrNoCredentials. Safe for
// concurrent use.
func (s *Server) SetTokens(ctx context.Context, tokens []Token) error {
	if len(tokens) == 0 && s.oidc == nil && len(s.keys.Load().tokens) > 0 {
		s.refusedTokens.Add(1)
		return fmt.Errorf("no tokens and no OIDC issuer: %w", ErrNoCredentials)
	}
	next := newKeyring(tokens)
	old := s.keys.Swap(next)
	for _, name := range changed(old, next) {
		key := principal{name: name, via: viaToken}.key()
		s.sessions.dropPrincipal(ctx, key)
		s.requests.end(key)
		s.log.Info("token revoked: its sessions and requests ended", "token", name)
	}
	if len(old.tokens) == 0 && len(tokens) > 0 {
		// The local sessions of a server that had no tokens end too.
		s.sessions.dropPrincipal(ctx, localPrincipal.key())
		s.requests.end(localPrincipal.key())
	}
	return nil
}

// RefusedTokenChanges returns how many changes of the tokens SetTokens
// refused since New. Safe for concurrent use.
func (s *Server) RefusedTokenChanges() uint64 { return s.refusedTokens.Load() }

// audit records e about request r, with r's time, client, method, route
// and requester filled in where e has none. A failure is logged: the
// request goes on (event reads, which must not go unaudited, use
// recordAudit's error).
func (s *Server) audit(r *http.Request, e api.AuditEntry) {
	if err := s.recordAudit(r, e); err != nil {
		s.log.Warn("audit: an entry could not be recorded", "kind", e.Kind, "err", err)
	}
}

func (s *Server) recordAudit(r *http.Request, e api.AuditEntry) error {
	if s.cfg.Audit == nil {
		return nil
	}
	ri := info(r)
	if e.Time == 0 {
		e.Time = s.now().UnixMilli()
	}
	if e.Client == "" {
		e.Client = ri.clientString()
	}
	if e.Method == "" {
		e.Method = r.Method
	}
	if e.Route == "" {
		e.Route = r.Pattern
		if e.Route == "" {
			e.Route = cut(r.URL.Path)
		}
	}
	if e.Actor == "" && ri.who != nil {
		e.Actor, e.Role = ri.who.name, string(ri.who.role)
	}
	if e.Credential == "" && ri.who != nil {
		e.Credential = ri.who.credential(ri.session)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	return s.cfg.Audit.Record(ctx, e)
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.front) }

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
			var done func()
			if r, p, done, ok = s.authorize(sw, r, rt.role); !ok {
				return
			}
			defer done()
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

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
		writeJSON(w, http.StatusMethodNotAllowed, api.Error{Code: "MethodNotAllowed",
			Message: fmt.Sprintf("%s is not allowed on %s; use %s", cut(r.Method), cut(r.URL.Path), strings.Join(allow, " or ")),
			Details: map[string]any{"allow": allow}})
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/records/"); ok && r.Method == http.MethodPost {
		if _, name, ok := strings.Cut(rest, "/"); ok && !strings.Contains(name, "/") {
			writeJSON(w, http.StatusNotFound, api.Error{Code: "NotFound",
				Message: "unknown command " + quote(name) + "; the commands are " + strings.Join(OperatorCommands, ", "), Details: map[string]any{"field": "command"}})
			return
		}
	}
	writeJSON(w, http.StatusNotFound, api.Error{Code: "NotFound", Message: "no route " + cut(r.Method) + " " + cut(r.URL.Path) + "; the API is described at /api/v1/openapi.json"})
}

// allowed lists the methods that have a route for r's path.
func (s *Server) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
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
