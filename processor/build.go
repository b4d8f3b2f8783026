package processor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
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
	kv  jetstream.KeyValue
	js  jetstream.JetStream
	ttl time.Duration
}

// OpenBuildRegistry returns the registry in bucket (DefaultBuildBucket if
// ""), creating it with the entry TTL ttl (DefaultBuildTTL if 0, at least
// 1 s) and replicas (1 if 0) if it does not exist.
func OpenBuildRegistry(ctx context.Context, js jetstream.JetStream, bucket string, ttl time.Duration, replicas int) (*BuildRegistry, error) {
	if bucket == "" {
		bucket = DefaultBuildBucket
	}
	if ttl == 0 {
		ttl = DefaultBuildTTL
	}
	if replicas == 0 {
		replicas = 1
	}
	if ttl < time.Second || replicas < 1 || replicas > 5 {
		return nil, invalidOption("build registry TTL must be at least 1s and replicas from 1 to 5, got %s and %d", ttl, replicas)
	}
	cfg := jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: the builds processors run", History: 1, TTL: ttl, Replicas: replicas, MaxValueSize: 4 << 10}
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("build registry %s: %w", bucket, err)
	}
	return &BuildRegistry{kv: kv, js: js, ttl: ttl}, nil
}

// TTL is how long an entry lives after its last heartbeat.
func (r *BuildRegistry) TTL() time.Duration { return r.ttl }

func buildKey(context, processor, instance string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(context)) + "." + enc.EncodeToString([]byte(processor)) + "." + enc.EncodeToString([]byte(instance))
}

// Register writes (or renews) entry e.
func (r *BuildRegistry) Register(ctx context.Context, e BuildEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = r.kv.Put(ctx, buildKey(e.Context, e.Processor, e.Instance), b)
	return err
}

// Unregister removes the entry of instance of processor.
func (r *BuildRegistry) Unregister(ctx context.Context, context, processor, instance string) error {
	err := r.kv.Delete(ctx, buildKey(context, processor, instance))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// Builds lists the live entries. Entries that do not decode are skipped.
func (r *BuildRegistry) Builds(ctx context.Context) ([]BuildEntry, error) {
	// Not ListKeys: its end comes early while entries are refreshed, and
	// would hide live instances (see kvwatch).
	keys, err := kvwatch.Keys(ctx, r.js, r.kv, ">")
	if err != nil {
		return nil, err
	}
	var out []BuildEntry
	for _, key := range keys {
		kve, err := r.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var e BuildEntry
		if json.Unmarshal(kve.Value(), &e) == nil && e.Processor != "" {
			out = append(out, e)
		}
	}
	return out, nil
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
	t := time.NewTicker(bc.registry.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			for _, g := range p.groups {
				_ = bc.registry.Unregister(done, p.context, g.name, bc.instance)
			}
			cancel()
			return
		case <-t.C:
			beat()
		}
	}
}
