package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/partition"
)

// OpenPartitions returns the bucket of the partitions' plan, creating it
// if it does not exist (replicas: 1 to 5). Its content is recomputed by
// the coordinator, so a bucket found with other settings is an error
// wrapping ErrIncompatibleBucket that kvstore.Repair can mend.
func OpenPartitions(ctx context.Context, js jetstream.JetStream, replicas int) (*kvstore.Store[partition.Plan], error) {
	if !bounds.Within(replicas, 1, 5) {
		return nil, fmt.Errorf("partitions bucket replicas must be between 1 and 5, got %d: %w", replicas, ErrInvalidOption)
	}
	b, err := kvstore.Open(ctx, js, partitionsSpec(DefaultPartitionsBucket, replicas))
	if errors.Is(err, kvstore.ErrMismatch) {
		return nil, fmt.Errorf("partitions bucket %s: %w: %w", DefaultPartitionsBucket, err, ErrIncompatibleBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("partitions bucket %s: %w", DefaultPartitionsBucket, err)
	}
	return kvstore.For(b, planCodec), nil
}

// RepairPartitions brings the partitions bucket to replicas (1 to 5): its
// content is recomputed by the coordinator, so a bucket whose replicas
// cannot change in place is deleted and created again. With dryRun it
// only says what it would do. It returns the action ("none", "updated",
// "recreated") and the differences found.
func RepairPartitions(ctx context.Context, js jetstream.JetStream, replicas int, dryRun bool) (string, []string, error) {
	if !bounds.Within(replicas, 1, 5) {
		return "", nil, fmt.Errorf("partitions bucket replicas must be between 1 and 5, got %d: %w", replicas, ErrInvalidOption)
	}
	r, err := kvstore.Repair(ctx, js, partitionsSpec(DefaultPartitionsBucket, replicas), dryRun)
	return r.Action, r.Diffs, err
}

func partitionsSpec(bucket string, replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: the plan of the partitions and the two before it", History: 3, Replicas: replicas},
		Disposable: true, Match: []kvstore.Setting{kvstore.SettingReplicas}}
}

// planCodec reads a plan: JSON that partition.Plan.Validate accepts.
var planCodec = kvstore.Codec[partition.Plan]{
	Decode: func(e kvstore.Entry) (partition.Plan, error) {
		var p partition.Plan
		if err := json.Unmarshal(e.Value, &p); err != nil {
			return p, kvstore.Invalid("", "not a plan in JSON: %v", err)
		}
		if e.Key != planKey {
			return p, kvstore.Invalid("key", "a plan is stored under %q", planKey)
		}
		if err := p.Validate(); err != nil {
			return p, kvstore.Invalid("owners", "%v", err)
		}
		return p, nil
	},
}

// Sizes is what a member reports each round (key sizes.<instance> in the
// plan's bucket): the records it holds per processor, and the processors
// it saw records of that the plan does not place. The coordinator places
// the partitions by the sum over the live members.
type Sizes struct {
	Records  map[string]uint64 `json:"records"`
	Unplaced map[string]uint64 `json:"unplaced,omitempty"`
}

const sizesPrefix = "sizes."

// sizesCodec reads a member's Sizes: at most partition.MaxPartitions
// processors, each a valid processor name, under a member's key.
var sizesCodec = kvstore.Codec[Sizes]{
	Decode: func(e kvstore.Entry) (Sizes, error) {
		var s Sizes
		if _, err := partitionKeys.Decode(strings.TrimPrefix(e.Key, sizesPrefix)); err != nil || !strings.HasPrefix(e.Key, sizesPrefix) {
			return s, kvstore.Invalid("key", "a member's sizes are stored under %s<instance>", sizesPrefix)
		}
		if err := json.Unmarshal(e.Value, &s); err != nil {
			return s, kvstore.Invalid("", "not a member's sizes in JSON: %v", err)
		}
		for field, m := range map[string]map[string]uint64{"records": s.Records, "unplaced": s.Unplaced} {
			if len(m) > partition.MaxPartitions {
				return s, kvstore.Invalid(field, "%d processors, over the limit of %d", len(m), partition.MaxPartitions)
			}
			for proc := range m {
				if err := partition.CheckID(proc); err != nil || strings.Contains(proc, "/") {
					return s, kvstore.Invalid(field, "%.40q is not a processor's name", proc)
				}
			}
		}
		return s, nil
	},
}

// reportSizes writes this member's sizes.
func (p *Partitions) reportSizes(ctx context.Context) error {
	held, unplaced := p.sizes()
	_, err := p.reports.Put(ctx, sizesPrefix+p.token, Sizes{Records: held, Unplaced: unplaced})
	return err
}

// sizesOf returns the records per processor the members report: added
// over the members that hold them, and for a processor no one holds, the
// most any member saw (every member sees them). A member whose report
// cannot be read counts for nothing.
func (p *Partitions) sizesOf(ctx context.Context, members []string) (map[string]uint64, error) {
	total, unplaced := map[string]uint64{}, map[string]uint64{}
	for _, m := range members {
		tok, err := partitionKeys.Encode(m)
		if err != nil {
			continue
		}
		s, _, err := p.reports.Get(ctx, sizesPrefix+tok)
		switch {
		case errors.Is(err, kvstore.ErrNotFound), errors.Is(err, kvstore.ErrInvalid):
			continue // not reported yet, or quarantined by the store
		case err != nil:
			return nil, err
		}
		for proc, n := range s.Records {
			total[proc] += n
		}
		for proc, n := range s.Unplaced {
			unplaced[proc] = max(unplaced[proc], n)
		}
	}
	for proc, n := range unplaced {
		if _, ok := total[proc]; !ok {
			total[proc] = n
		}
	}
	return total, nil
}
