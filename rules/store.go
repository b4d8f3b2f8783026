package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// DefaultBucket is the KV bucket of the rules.
const DefaultBucket = "amends_rules"

var idPattern = regexp.MustCompile(`^r-[0-9a-f]{12}$`)

// ValidID reports whether id has the shape of a rule id ("r-" and 12
// hexadecimal digits).
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Store keeps rules in a KV bucket, one key per rule id. Safe for
// concurrent use.
type Store struct {
	rules *kvstore.Store[api.Rule]
	clock aggregate.Clock
}

// StoreOption configures OpenStore; one that cannot be applied makes
// OpenStore return an error wrapping ErrInvalidOption.
type StoreOption func(*storeOptions) error

type storeOptions struct {
	cfg        jetstream.KeyValueConfig
	clock      aggregate.Clock
	quarantine *quarantine.Quarantine
}

// WithQuarantine records the stored rules that do not validate in q
// (kind kv, reason invalid_entry); they match nothing either way. Without
// it they are logged, at most once per interval.
func WithQuarantine(q *quarantine.Quarantine) StoreOption {
	return func(o *storeOptions) error {
		if q == nil {
			return fmt.Errorf("quarantine is nil: %w", ErrInvalidOption)
		}
		o.quarantine = q
		return nil
	}
}

// WithBucket names the bucket (default DefaultBucket).
func WithBucket(name string) StoreOption {
	return func(o *storeOptions) error {
		if name == "" {
			return fmt.Errorf("rules bucket name is empty: %w", ErrInvalidOption)
		}
		o.cfg.Bucket = name
		return nil
	}
}

// WithReplicas sets the replica count of a new bucket (default 1; 3 in a
// cluster).
func WithReplicas(n int) StoreOption {
	return func(o *storeOptions) error {
		if !bounds.Within(n, 1, 5) {
			return fmt.Errorf("rules bucket replicas must be between 1 and 5, got %d: %w", n, ErrInvalidOption)
		}
		o.cfg.Replicas = n
		return nil
	}
}

// WithClock sets the clock of creation and audit times (default the
// system clock).
func WithClock(c aggregate.Clock) StoreOption {
	return func(o *storeOptions) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		o.clock = c
		return nil
	}
}

// OpenStore returns the rules store, creating its bucket if it does not
// exist.
func OpenStore(ctx context.Context, js jetstream.JetStream, opts ...StoreOption) (*Store, error) {
	o := storeOptions{
		cfg: jetstream.KeyValueConfig{Bucket: DefaultBucket, Description: "amends: operator rules on failures",
			History: 1, Storage: jetstream.FileStorage, Replicas: 1, MaxValueSize: maxValueBytes},
		clock: aggregate.ClockFunc(time.Now),
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	var kopts []kvstore.Option
	if o.quarantine != nil {
		kopts = append(kopts, kvstore.WithRecorder(o.quarantine))
	}
	b, err := kvstore.Open(ctx, js, bucketSpec(o.cfg), append(kopts, kvstore.WithClock(o.clock.Now))...)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return &Store{rules: kvstore.For(b, ruleCodec), clock: o.clock}, nil
}

// Add validates r (see Validate), gives it an id, its creation time
// and the first audit entry, and stores it. Errors wrap ErrInvalidRule,
// ErrTooMany (MaxRules live rules), or come from NATS.
func (s *Store) Add(ctx context.Context, r api.Rule) (api.Rule, error) {
	now := s.clock.Now()
	r.Reason, r.Actor = strings.TrimSpace(r.Reason), strings.TrimSpace(r.Actor)
	if err := Validate(&r, now); err != nil {
		return api.Rule{}, err
	}
	all, err := s.List(ctx, false)
	if err != nil {
		return api.Rule{}, err
	}
	if len(all) >= MaxRules {
		return api.Rule{}, fmt.Errorf("the store holds %d rules, the most it keeps; remove some first: %w", len(all), ErrTooMany)
	}
	r.ID = "r-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	r.CreatedAt, r.RemovedAt, r.Recorded, r.Applied, r.Audit = now.UnixMilli(), 0, 0, 0, nil
	audit(&r, api.RuleAudit{Op: "add", Actor: r.Actor, Reason: r.Reason, At: r.CreatedAt})
	if _, err := s.rules.Create(ctx, r.ID, r); err != nil {
		return api.Rule{}, fmt.Errorf("store rule %s: %w", r.ID, err)
	}
	return r, nil
}

// Get returns the rule id, removed or not. Errors wrap ErrNotFound; a
// stored rule that does not validate (DecodeStored) is an error matching
// ErrInvalidRule and kvstore's ErrInvalid that names the field.
func (s *Store) Get(ctx context.Context, id string) (api.Rule, error) {
	r, _, err := s.get(ctx, id)
	return r, err
}

func (s *Store) get(ctx context.Context, id string) (api.Rule, uint64, error) {
	if !ValidID(id) {
		return api.Rule{}, 0, fmt.Errorf("rule id must be r- followed by 12 hexadecimal digits, got %q: %w", id, ErrNotFound)
	}
	r, rev, err := s.rules.Get(ctx, id)
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		return api.Rule{}, 0, fmt.Errorf("rule %s: %w", id, ErrNotFound)
	case errors.Is(err, kvstore.ErrInvalid):
		return api.Rule{}, rev, fmt.Errorf("rule %s is stored invalid, so it matches nothing; write it again or remove it with amends repair purge-entry (%w): %w", id, err, ErrInvalidRule)
	case err != nil:
		return api.Rule{}, 0, fmt.Errorf("read rule %s: %w", id, err)
	}
	return r, rev, nil
}

// List returns the rules, oldest first; removed ones only if withRemoved.
// Stored rules that do not validate are left out (they match nothing and
// are in the quarantine).
func (s *Store) List(ctx context.Context, withRemoved bool) ([]api.Rule, error) {
	var out []api.Rule
	err := s.rules.Scan(ctx, ">", func(_ string, r api.Rule, _ uint64, err error) {
		if err == nil && (withRemoved || r.RemovedAt == 0) {
			out = append(out, r)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	slices.SortFunc(out, func(a, b api.Rule) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Remove marks rule id removed, with actor and reason (required) in its
// audit; it no longer matches. Removing a removed rule is an error
// wrapping ErrNotFound.
func (s *Store) Remove(ctx context.Context, id, actor, reason string) (api.Rule, error) {
	reason = strings.TrimSpace(reason)
	if err := checkText("reason", reason, MaxReasonBytes, true, operatorText); err != nil {
		return api.Rule{}, err
	}
	if err := checkText("actor", actor, MaxNameBytes, false, operatorText); err != nil {
		return api.Rule{}, err
	}
	return s.update(ctx, id, func(r *api.Rule, now int64) error {
		if r.RemovedAt != 0 {
			return fmt.Errorf("rule %s was removed already: %w", id, ErrNotFound)
		}
		r.RemovedAt = now
		audit(r, api.RuleAudit{Op: "remove", Actor: actor, Reason: reason, At: now})
		return nil
	})
}

// RecordApply adds an apply that touched n records to rule id's audit and
// Applied count.
func (s *Store) RecordApply(ctx context.Context, id, actor, reason string, n int) (api.Rule, error) {
	return s.update(ctx, id, func(r *api.Rule, now int64) error {
		r.Applied += int64(n)
		audit(r, api.RuleAudit{Op: "apply", Actor: actor, Reason: reason, At: now, Records: n})
		return nil
	})
}

// AddRecorded adds n to rule id's Recorded count.
func (s *Store) AddRecorded(ctx context.Context, id string, n int64) error {
	_, err := s.update(ctx, id, func(r *api.Rule, _ int64) error { r.Recorded += n; return nil })
	return err
}

// update changes rule id with f under optimistic concurrency (the
// bucket's Change loop), retrying on a concurrent change.
func (s *Store) update(ctx context.Context, id string, f func(r *api.Rule, now int64) error) (api.Rule, error) {
	if !ValidID(id) {
		return api.Rule{}, fmt.Errorf("rule id must be r- followed by 12 hexadecimal digits, got %q: %w", id, ErrNotFound)
	}
	r, _, err := s.rules.Change(ctx, id, func(cur kvstore.Current[api.Rule]) (api.Rule, kvstore.Action, error) {
		switch {
		case cur.Invalid != nil:
			return api.Rule{}, kvstore.Keep, fmt.Errorf("rule %s is stored invalid, so it matches nothing; write it again or remove it with amends repair purge-entry (%w): %w", id, cur.Invalid, ErrInvalidRule)
		case !cur.Exists():
			return api.Rule{}, kvstore.Keep, fmt.Errorf("rule %s: %w", id, ErrNotFound)
		}
		r := cur.Value
		if err := f(&r, s.clock.Now().UnixMilli()); err != nil {
			return api.Rule{}, kvstore.Keep, err
		}
		derive(&r)
		return r, kvstore.Write, nil
	})
	return r, err
}
