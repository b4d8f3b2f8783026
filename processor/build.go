package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// Build registry defaults.
const (
	DefaultBuildBucket = "amends_builds"
	DefaultBuildTTL    = 30 * time.Second
)

// MaxBuildText bounds a build's version and revision, in bytes.
const MaxBuildText = 256

// Build names the code an instance runs: its module version and VCS
// revision.
type Build struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
}

// String renders b as "version@revision" (or the version alone).
func (b Build) String() string {
	if b.Revision == "" {
		return b.Version
	}
	return b.Version + "@" + b.Revision
}

// BinaryBuild returns the build of the running binary from its build info:
// the main module's version and the vcs.revision setting (with "+dirty"
// when vcs.modified is true). Either may be empty, e.g. in tests.
func BinaryBuild() Build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{}
	}
	b := Build{Version: bi.Main.Version}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Revision != "" {
		b.Revision += "+dirty"
	}
	return b
}

// BuildEntry is one running instance of a processor as the registry holds
// it. Times are epoch ms.
type BuildEntry struct {
	Context     string `json:"context"`
	Processor   string `json:"processor"`
	Instance    string `json:"instance"`
	Build       Build  `json:"build"`
	StartedAt   int64  `json:"startedAt"`
	HeartbeatAt int64  `json:"heartbeatAt"`
}

// BuildRegistry is a KV bucket of the instances running each processor
// and their builds. An entry expires TTL after its last heartbeat, so a
// dead instance drops out on its own. Safe for concurrent use.
type BuildRegistry struct {
	entries *kvstore.Store[BuildEntry]
	ttl     time.Duration
}

// BuildRegistryOption configures OpenBuildRegistry.
type BuildRegistryOption func(*buildRegistryOptions)

type buildRegistryOptions struct{ quarantine *quarantine.Quarantine }

// WithRegistryQuarantine records the entries of the registry that do not
// validate (DecodeBuildEntry) in q, the process's quarantine (default: a
// quarantine on js). They are skipped either way.
func WithRegistryQuarantine(q *quarantine.Quarantine) BuildRegistryOption {
	return func(o *buildRegistryOptions) { o.quarantine = q }
}

// BuildRegistrySpec is the registry's bucket as the KV layer opens it: its
// entries expire ttl after their last heartbeat and may be lost (they are
// written again every third of it).
func BuildRegistrySpec(bucket string, ttl time.Duration, replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: the builds processors run", History: 1, TTL: ttl, Replicas: replicas, MaxValueSize: maxBuildEntry},
		MaxValue: maxBuildEntry, Disposable: true}
}

const maxBuildEntry = 4 << 10

var buildCodec = kvstore.Codec[BuildEntry]{Decode: func(e kvstore.Entry) (BuildEntry, error) { return DecodeBuildEntry(e.Key, e.Value, e.Now) }}

// DecodeBuildEntry reads a registry entry stored under key, validating
// every field at now: the key is the entry's context, processor and
// instance (base64url, dot-separated), each a name; the build has a
// version or a revision of at most MaxBuildText bytes; startedAt and
// heartbeatAt are times before now, the heartbeat not before the start.
// An error names the field; the registry skips such an entry, so one odd
// key never hides the others.
func DecodeBuildEntry(key string, value []byte, now time.Time) (BuildEntry, error) {
	parts, err := kvstore.SplitSegments(key, 3)
	if err != nil {
		return BuildEntry{}, kvstore.Invalid("key", "%v; a registry key is context, processor and instance, base64url, dot-separated", err)
	}
	var e BuildEntry
	if err := json.Unmarshal(value, &e); err != nil {
		return BuildEntry{}, kvstore.Invalid("", "not a build entry in JSON: %v", err)
	}
	if e.Context != parts[0] || e.Processor != parts[1] || e.Instance != parts[2] {
		return BuildEntry{}, kvstore.Invalid("instance", "%s/%s/%s is not the key's %s/%s/%s", kvstore.Quote(e.Context), kvstore.Quote(e.Processor),
			kvstore.Quote(e.Instance), kvstore.Quote(parts[0]), kvstore.Quote(parts[1]), kvstore.Quote(parts[2]))
	}
	for _, c := range []struct{ field, v string }{{"context", e.Context}, {"processor", e.Processor}, {"instance", e.Instance}} {
		if err := kvstore.Name(c.field, c.v, 256); err != nil {
			return BuildEntry{}, err
		}
	}
	if e.Build.Version == "" && e.Build.Revision == "" {
		return BuildEntry{}, kvstore.Invalid("build", "has neither a version nor a revision")
	}
	if err := kvstore.Text("build.version", e.Build.Version, MaxBuildText, false); err != nil {
		return BuildEntry{}, err
	}
	if err := kvstore.Text("build.revision", e.Build.Revision, MaxBuildText, false); err != nil {
		return BuildEntry{}, err
	}
	if err := kvstore.Past("startedAt", e.StartedAt, now, false); err != nil {
		return BuildEntry{}, err
	}
	if err := kvstore.Past("heartbeatAt", e.HeartbeatAt, now, false); err != nil {
		return BuildEntry{}, err
	}
	if e.HeartbeatAt < e.StartedAt {
		return BuildEntry{}, kvstore.Invalid("heartbeatAt", "%d is before startedAt %d", e.HeartbeatAt, e.StartedAt)
	}
	return e, nil
}

// OpenBuildRegistry returns the registry in bucket (DefaultBuildBucket if
// ""), creating it with the entry TTL ttl (DefaultBuildTTL if 0, at least
// 1 s) and replicas (1 if 0) if it does not exist. An existing bucket's
// own TTL is the one the registry beats by (TTL).
func OpenBuildRegistry(ctx context.Context, js jetstream.JetStream, bucket string, ttl time.Duration, replicas int, opts ...BuildRegistryOption) (*BuildRegistry, error) {
	if bucket == "" {
		bucket = DefaultBuildBucket
	}
	if ttl == 0 {
		ttl = DefaultBuildTTL
	}
	if replicas == 0 {
		replicas = 1
	}
	if ttl < time.Second || !bounds.Within(replicas, 1, 5) {
		return nil, invalidOption("build registry TTL must be at least 1s and replicas from 1 to 5, got %s and %d", ttl, replicas)
	}
	var o buildRegistryOptions
	for _, opt := range opts {
		opt(&o)
	}
	var kopts []kvstore.Option
	if o.quarantine != nil {
		kopts = append(kopts, kvstore.WithRecorder(o.quarantine))
	}
	b, err := kvstore.Open(ctx, js, BuildRegistrySpec(bucket, ttl, replicas), kopts...)
	if err != nil {
		return nil, fmt.Errorf("build registry: %w", err)
	}
	// An existing bucket's TTL is the one its entries expire with: beat by
	// it, whatever this instance was given.
	if st, err := b.KV().Status(ctx); err == nil && st.TTL() >= time.Second {
		ttl = st.TTL()
	}
	return &BuildRegistry{entries: kvstore.For(b, buildCodec), ttl: ttl}, nil
}

// TTL is how long an entry lives after its last heartbeat.
func (r *BuildRegistry) TTL() time.Duration { return r.ttl }

func buildKey(context, processor, instance string) string {
	return kvstore.Segments(context, processor, instance)
}

// Register writes (or renews) entry e.
func (r *BuildRegistry) Register(ctx context.Context, e BuildEntry) error {
	_, err := r.entries.Put(ctx, buildKey(e.Context, e.Processor, e.Instance), e)
	return err
}

// Unregister removes the entry of instance of processor.
func (r *BuildRegistry) Unregister(ctx context.Context, context, processor, instance string) error {
	return r.entries.Delete(ctx, buildKey(context, processor, instance), 0)
}

// Builds lists the live entries, read completely (not ListKeys, whose end
// comes early while entries are refreshed: see kvwatch). Entries that do
// not validate (DecodeBuildEntry) are skipped and quarantined: an odd key
// hides nothing else.
func (r *BuildRegistry) Builds(ctx context.Context) ([]BuildEntry, error) {
	var out []BuildEntry
	err := r.entries.Scan(ctx, ">", func(_ string, e BuildEntry, _ uint64, err error) {
		if err == nil {
			out = append(out, e)
		}
	})
	return out, err
}

type buildConfig struct {
	registry *BuildRegistry
	build    Build
	instance string
}

// WithBuildRegistry makes Run register the build of each of its
// processors in registry while it runs, renewing the entry every third of
// the registry's TTL and removing it when Run returns. A zero build means
// BinaryBuild(). The scheduler releases records held until a deploy when
// a processor registers a new build.
func WithBuildRegistry(registry *BuildRegistry, build Build) Option {
	return func(o *options) error {
		if registry == nil {
			return invalidOption("build registry is nil")
		}
		if build == (Build{}) {
			build = BinaryBuild()
		}
		if strings.TrimSpace(build.Version) == "" && strings.TrimSpace(build.Revision) == "" {
			build.Version = "(unknown)"
		}
		o.build = &buildConfig{registry: registry, build: build, instance: uuid.NewString()}
		return nil
	}
}

// heartbeat registers the processors' build until ctx ends, then removes
// the entries. Failures are logged and retried at the next beat.
func (p *Processor) heartbeat(ctx context.Context) {
	bc := p.o.build
	if bc == nil || len(p.groups) == 0 {
		return
	}
	started := p.o.clock.Now().UnixMilli()
	beat := func() {
		now := p.o.clock.Now().UnixMilli()
		for _, g := range p.groups {
			e := BuildEntry{Context: p.context, Processor: g.name, Instance: bc.instance, Build: bc.build, StartedAt: started, HeartbeatAt: now}
			if err := bc.registry.Register(ctx, e); err != nil && ctx.Err() == nil {
				p.o.logger.Warn("amends processor: build registration failed; retrying at the next heartbeat", "processor", g.name, "err", err)
			}
		}
	}
	beat()
	wait.Every(ctx, bc.registry.ttl/3, beat)
	done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	for _, g := range p.groups {
		_ = bc.registry.Unregister(done, p.context, g.name, bc.instance)
	}
}
