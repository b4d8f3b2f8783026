package main

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/natsconn"
	"github.com/amends-dev/amends/notify"
	"github.com/amends-dev/amends/retention"
	"github.com/amends-dev/amends/scheduler"
	"github.com/amends-dev/amends/server"
)

const serveLong = `Serve runs the amends control plane until it receives SIGINT or SIGTERM,
then stops cleanly.

By default it starts an embedded NATS server with JetStream, storing its
data in --data-dir and listening for clients on --nats-listen; nothing else
needs to be installed. The embedded server has no authentication, so it
listens on loopback only. It locks --data-dir (the file amends.lock holds
the pid): a second serve on the same directory exits 1 naming that pid. With --nats-url it connects to an existing NATS
server or cluster instead, authenticating with --nats-creds or --nats-nkey
and verifying TLS with --nats-tls-ca, --nats-tls-cert and --nats-tls-key.

At start it provisions the event store stream of the compensation context
(AMENDS_compensation) with --storage, --replicas and --max-msg-size. An
existing stream with other settings is reported, never changed. Then it
runs the projection of the records (a KV bucket of views and an in-memory
index), the retry scheduler (--scheduler; one active instance across
servers, elected with a lease) and the HTTP API on --http: /api/v1 (see
/api/v1/openapi.json), /metrics, /healthz and /readyz. /readyz answers 503
until NATS is connected, the index is loaded and JetStream acknowledges a
write to the amends_health bucket (checked at most once a second), and
while a bucket has settings other than the ones serve needs.

Buckets: amends never reconfigures an existing bucket on its own. A bucket
whose settings differ (the scheduler's lease with another TTL, the views
with other replicas or storage) is used as it is, logged and reported by
/readyz; --repair-buckets changes their settings in place where JetStream
allows it, or deletes and creates again a bucket whose content is rebuilt
(the views, which are then projected again) or transient (the lease), at
start, before anything uses them. Entries of a bucket that do not validate
are skipped and shown by amends quarantine list; see amends repair.

Past one serve: with --partitions and --instance NAME, the serve instances
on one NATS cluster split the records. Each indexes and prepares the
records of the partitions it leases (placed by size, moved when an
instance joins, stops or dies) and answers the others' queries for them;
any instance answers every query, or 503 PartitionsMissing naming the
partitions it could not reach, never a short answer. Index snapshots are
off with it. See docs/scaling.md.

The API closes connections idle for 60s and gives each write 60s; it holds
at most --http-max-connections connections, closing the longest-idle one
for a new client. At start serve raises its open-file limit to the hard
limit where allowed, and logs it.

The API authenticates bearer tokens (--tokens-file, AMENDS_TOKENS) with the
role viewer (read) or operator (commands), and with OIDC the issuer's JWTs.
Without either it serves only on a loopback address, to anyone on this
machine, and says so at start.

` + httpSecHelp + `

Durability: a file stream on one server acknowledges writes before they
reach the disk, which happens every 2 minutes; a machine crash can lose the
last acknowledged writes. --sync-always fsyncs every write of the embedded
server (a few thousand writes per second at most). In a cluster, use
--replicas 3: a replicated stream keeps acknowledged writes through the loss
of a machine.

` + notifyHelp + `

` + retentionHelp + `

` + configHelp + `

` + envHelp

// serveFlags are the raw flag values of serve.
type serveFlags struct {
	configFile string

	dataDir    string
	listen     string
	syncAlways bool
	natsDebug  bool

	natsURL string
	creds   string
	nkey    string
	tlsCA   string
	tlsCert string
	tlsKey  string

	storage    string
	replicas   int
	maxMsgSize int32

	http        string
	maxConns    int
	tokensFile  string
	tokens      string
	scheduler   bool
	period      time.Duration
	delay       time.Duration
	batch       int
	concurrency int
	leaseTTL    time.Duration
	drainRate   float64
	rate        float64

	repairBuckets  bool
	startupTimeout time.Duration

	retention retentionFlags
	notify    notifyFlags
	sec       httpSecFlags
	snap      snapshotFlags
	comp      compressionFlags
	part      partitionFlags
	migrate   migrateFlags
}

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the amends control plane on an embedded or existing NATS server",
		Long:  serveLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.configFile != "" {
				if err := applyConfig(cmd.Flags(), f.configFile); err != nil {
					return err
				}
			}
			cfg, err := f.config(cmd, a.lookupEnv, a.logger)
			if err != nil {
				return err
			}
			if cfg.notify, err = f.notify.config(cmd.Flags(), a.lookupEnv); err != nil {
				return err
			}
			cfg.ready = a.serveReady
			traces, err := serveTracing(cmd.Context(), a.logger, a.lookupEnv, a.stderr) // serve_tracing.go
			if err != nil {
				return err
			}
			defer stopTracing(traces, a.logger)
			return run(cmd.Context(), cfg, a.logger)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&f.configFile, "config", "", "file of settings, one flag-name: value per line (see above)")
	fs.StringVar(&f.dataDir, "data-dir", "./amends-data", "directory the embedded NATS server keeps its JetStream data in")
	fs.StringVar(&f.listen, "nats-listen", "127.0.0.1:4222", "host:port on loopback the embedded NATS server accepts clients on (it has no authentication); port 0 or -1 picks a free port")
	fs.BoolVar(&f.syncAlways, "sync-always", false, "make the embedded server fsync every write before acknowledging it (much slower; see Durability)")
	fs.BoolVar(&f.natsDebug, "nats-debug", false, "log the embedded server's notices and debug lines, not only its warnings and errors")
	fs.StringVar(&f.natsURL, "nats-url", "", "connect to this NATS server or cluster instead of starting the embedded one (comma-separated URLs)")
	fs.StringVar(&f.creds, "nats-creds", "", "NATS credentials file (user JWT and seed) for --nats-url")
	fs.StringVar(&f.nkey, "nats-nkey", "", "NKey user seed file for --nats-url (instead of --nats-creds)")
	fs.StringVar(&f.tlsCA, "nats-tls-ca", "", "PEM file of the CAs that sign the servers' certificates, for --nats-url")
	fs.StringVar(&f.tlsCert, "nats-tls-cert", "", "PEM client certificate for --nats-url (with --nats-tls-key)")
	fs.StringVar(&f.tlsKey, "nats-tls-key", "", "PEM client key for --nats-url (with --nats-tls-cert)")
	fs.StringVar(&f.storage, "storage", "file", "storage of the event store streams: file or memory (memory loses everything on restart)")
	fs.IntVar(&f.replicas, "replicas", 1, "replicas of the event store streams, 1 to 5: 1 on one server, 3 in a cluster")
	fs.Int32Var(&f.maxMsgSize, "max-msg-size", jsstore.DefaultMaxMsgSize, "largest stored command in bytes, 1024 to 67108864 (64 MiB); the server's max_payload must allow it")
	fs.StringVar(&f.http, "http", "127.0.0.1:8080", "host:port of the HTTP API, /metrics and health checks (port 0 picks a free one); beyond loopback it needs tokens")
	fs.IntVar(&f.maxConns, "http-max-connections", 0, "most HTTP connections open at once (0: half the open-file limit, at most 4096); beyond it the longest-idle one is closed or new ones wait")
	fs.StringVar(&f.tokensFile, "tokens-file", "", "file of API tokens, one name:role:secret per line (roles viewer, operator)")
	fs.StringVar(&f.tokens, "tokens", "", "API tokens as name:role:secret,... (prefer AMENDS_TOKENS or --tokens-file: flags show in process lists)")
	fs.BoolVar(&f.scheduler, "scheduler", true, "run the retry scheduler (one instance is active at a time across servers)")
	fs.DurationVar(&f.period, "scheduler-period", scheduler.DefaultPeriod, "how often the active scheduler prepares due records, up to 24h")
	fs.DurationVar(&f.delay, "scheduler-initial-delay", scheduler.DefaultInitialDelay, "wait before the first scheduler pass, 0 to 24h")
	fs.IntVar(&f.batch, "scheduler-batch", scheduler.DefaultBatch, "records prepared per batch of a pass, 1 to 10000")
	fs.Float64Var(&f.rate, "scheduler-rate", scheduler.DefaultRate, "most records per second a pass prepares once more than a batch is due (batch after batch until none is), 0.1 to 100000")
	fs.IntVar(&f.concurrency, "scheduler-concurrency", scheduler.DefaultConcurrency, "prepares sent at once, 1 to 256")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", scheduler.DefaultLeaseTTL, "scheduler lease TTL, 1s to 24h: the longest a dead scheduler blocks another from taking over")
	fs.DurationVar(&f.startupTimeout, "startup-timeout", defaultStartupTimeout, "how long start-up rides out elections and lost servers while it provisions the stream and opens the buckets, 5s to 1h; past it serve exits with an error")
	fs.BoolVar(&f.repairBuckets, "repair-buckets", false, "at start, bring buckets with other settings to the ones serve needs (in place, or deleted and created again when their content is rebuilt or transient); see Buckets")
	fs.Float64Var(&f.drainRate, "drain-rate", scheduler.DefaultDrainRate, "most records per second a recovery drain prepares for one function after its circuit closes, 1 to 100000")
	f.retention.add(fs, retention.DefaultRetention)
	f.notify.add(fs)
	f.snap.add(fs)
	f.comp.add(fs)
	f.part.add(fs)
	f.migrate.add(fs)
	f.sec.add(fs)
	annotateEnv(fs)
	f.sec.addCommandLineOnly(fs) // after annotateEnv: never from the environment
	f.comp.addCommandLineOnly(fs)
	return cmd
}

// embeddedOnly are the flags that configure the embedded server.
var embeddedOnly = []string{"data-dir", "nats-listen", "sync-always", "nats-debug"}

// clientOnly are the flags that configure the connection to --nats-url.
var clientOnly = []string{"nats-creds", "nats-nkey", "nats-tls-ca", "nats-tls-cert", "nats-tls-key"}

// config validates the flags and returns the configuration of run. Every
// flag is checked before anything starts, whether it came from the command
// line, its AMENDS_ variable or --config; every error is a usage error
// naming the flag and its rule.
func (f *serveFlags) config(cmd *cobra.Command, env func(string) (string, bool), logger *slog.Logger) (serveConfig, error) {
	cfg := serveConfig{replicas: f.replicas, maxMsgSize: f.maxMsgSize, http: f.http, httpMaxConns: f.maxConns}
	if err := checkRange("http-max-connections", f.maxConns, 0, maxHTTPConnections, " (0: automatic)"); err != nil {
		return cfg, err
	}
	if err := f.controlPlane(&cfg, env, logger); err != nil {
		return cfg, err
	}
	if err := f.snap.config(&cfg); err != nil {
		return cfg, err
	}
	if err := f.comp.config(&cfg); err != nil {
		return cfg, err
	}
	if err := f.migrate.config(&cfg); err != nil {
		return cfg, err
	}
	if err := f.part.config(&cfg, cmd.Flags().Changed, f.scheduler); err != nil {
		return cfg, err
	}
	if err := checkRange("startup-timeout", f.startupTimeout, 5*time.Second, time.Hour, ""); err != nil {
		return cfg, err
	}
	cfg.startupTimeout = f.startupTimeout
	switch f.storage {
	case "file":
		cfg.storage = jetstream.FileStorage
	case "memory":
		cfg.storage = jetstream.MemoryStorage
	default:
		return cfg, usageErrorf("--storage must be file or memory, got %q", f.storage)
	}
	// The store checks these again; checking here makes a bad value a usage
	// error before anything starts.
	if err := checkRange("replicas", f.replicas, 1, 5, ""); err != nil {
		return cfg, err
	}
	if err := checkRange("max-msg-size", f.maxMsgSize, minMaxMsgSize, maxMaxMsgSize,
		" bytes (64 MiB is the largest max_payload of a NATS server)"); err != nil {
		return cfg, err
	}

	changed := cmd.Flags().Changed
	if f.natsURL != "" {
		if err := natsconn.CheckURLs(f.natsURL); err != nil {
			return cfg, usageErrorf("--nats-url: %v", err)
		}
		for _, name := range embeddedOnly {
			if changed(name) {
				return cfg, usageErrorf("--%s configures the embedded server, which --nats-url replaces: drop one of them", name)
			}
		}
		cfg.client = natsconn.ClientConfig{
			URL: f.natsURL, CredsFile: f.creds, NKeySeedFile: f.nkey,
			TLSCAFile: f.tlsCA, TLSCertFile: f.tlsCert, TLSKeyFile: f.tlsKey,
			Name: "amends serve",
		}
		return cfg, nil
	}

	for _, name := range clientOnly {
		if changed(name) {
			return cfg, usageErrorf("--%s configures the connection to --nats-url; the embedded server needs none: set --nats-url or drop it", name)
		}
	}
	if f.replicas > 1 {
		return cfg, usageErrorf("--replicas %d needs a NATS cluster, but the embedded server is a single server: use --replicas 1, or --nats-url to point at a cluster", f.replicas)
	}
	if f.dataDir == "" {
		return cfg, usageErrorf("--data-dir must not be empty")
	}
	host, port, err := parseListen(f.listen)
	if err != nil {
		return cfg, err
	}
	cfg.embedded = &natsconn.EmbeddedConfig{
		DataDir:    f.dataDir,
		Host:       host,
		Port:       port,
		SyncAlways: f.syncAlways,
		Debug:      f.natsDebug,
	}
	if f.maxMsgSize > natsDefaultMaxPayload {
		cfg.embedded.MaxPayload = f.maxMsgSize
	}
	return cfg, nil
}

// natsDefaultMaxPayload is nats-server's default max_payload (1 MiB).
const natsDefaultMaxPayload = 1 << 20

// parseListen parses --nats-listen; port 0 and -1 both pick a free port.
// The embedded server has no authentication, so it listens only on
// loopback.
func parseListen(s string) (host string, port int, err error) {
	bad := func() (string, int, error) {
		return "", 0, usageErrorf("--nats-listen %q: want host:port with a port from 1 to 65535, such as 127.0.0.1:4222, or port 0 or -1 for a free one", s)
	}
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return bad()
	}
	port, err = strconv.Atoi(p)
	if err != nil || !bounds.Within(port, -1, 65535) {
		return bad()
	}
	if !isLoopback(host) {
		what := "is not a loopback address"
		if host == "" {
			what = "listens on every interface"
		}
		return "", 0, usageErrorf("--nats-listen %s %s, and the embedded NATS server has no authentication: anyone who could reach it could read and change the event store. "+
			"Bind it to loopback (--nats-listen %s; reach it from elsewhere through an SSH tunnel), or run a NATS server with authentication and point --nats-url at it",
			s, what, loopbackHint(s))
	}
	if port == 0 {
		port = natsconn.RandomPort
	}
	return host, port, nil
}

// serveConfig is the validated configuration of run.
type serveConfig struct {
	// startupTimeout bounds start-up (--startup-timeout).
	startupTimeout time.Duration
	// embedded configures the embedded server; nil when client is used.
	embedded *natsconn.EmbeddedConfig
	// client configures the connection to an existing server or cluster.
	client natsconn.ClientConfig

	storage    jetstream.StorageType
	replicas   int
	maxMsgSize int32
	// compression is how the compensation stream and the views bucket are
	// stored; compressExisting changes existing ones in place at start.
	compression      jetstream.StoreCompression
	compressExisting bool

	// http is the API's address; tokens authenticate it: those of
	// tokensFile (re-read when it changes) and inlineTokens (--tokens).
	http         string
	tokens       []server.Token
	tokensFile   string
	inlineTokens []server.Token
	// allowedHosts are the Host names the API answers to besides IP
	// addresses and localhost; trustedProxies the peers whose forwarding
	// headers it believes.
	allowedHosts   []string
	trustedProxies []netip.Prefix
	// tls, if set, serves the API over HTTPS.
	tls *certReloader
	// oidc, if set, accepts the issuer's identities.
	oidc *server.OIDCConfig
	// httpMaxConns caps the API's connections; 0 means from the open-file
	// limit (see fileLimits).
	httpMaxConns int
	// scheduler configures the scheduler; nil disables it.
	scheduler *schedulerConfig
	// repairBuckets repairs the settings of mismatched buckets at start.
	repairBuckets bool
	// notify configures notifications; nil disables them.
	notify *notify.Config
	// retention configures the retention sweeper (with the scheduler);
	// nil or zero durations keep every record.
	retention *retentionConfig
	// migrateViews projects the views bucket and exits (--migrate-views);
	// migrateDryRun only says what it would do (--dry-run).
	migrateViews, migrateDryRun bool
	// indexSnapshotEvery is the index's snapshot period; 0: no snapshots.
	indexSnapshotEvery time.Duration
	// indexAuditRate is how many records a second the index audits.
	indexAuditRate int
	// partitions, if set, splits the records among the instances.
	partitions *partitionsConfig

	// ready, when set, is called once serve is ready, before it waits for
	// the context to end.
	ready func(serveInfo)
	// extra, when set, adds components that run beside the control plane
	// (amends demo's example service).
	// info is what serve will pass to ready.
	extra func(ctx context.Context, js jetstream.JetStream, info serveInfo) ([]component, error)
}

type schedulerConfig struct {
	period, delay  time.Duration
	batch, workers int
	leaseTTL       time.Duration
	drainRate      float64
	rate           float64
}

// serveInfo describes a ready serve.
type serveInfo struct {
	// NATSURL is the URL of the NATS server clients can use (for the
	// embedded server) or the one serve is connected to; passwords redacted.
	NATSURL string
	// Stream is the event store stream of the compensation context.
	Stream string
	// HTTPURL is the base URL of the API ("http://127.0.0.1:8080").
	HTTPURL string
}
