package scheduler

import "github.com/nats-io/nats.go/jetstream"

// The buckets' Specs and codecs, for the store conformance suite.
var (
	ParkReleaseSpec  = parkReleaseSpec
	ParkReleaseCodec = parkReleaseCodec
	LeaseCodec       = leaseCodec
)

// LeaseValue is a stored lease.
type LeaseValue = leaseValue

// NewLeaseValue returns the lease of holder renewed at ms.
func NewLeaseValue(holder string, ms int64) leaseValue {
	return leaseValue{Holder: holder, RenewedAt: ms}
}

// DefaultLeaseSpec is the lease bucket's Spec with the default settings.
var DefaultLeaseSpec = leaseSpec(jetstream.KeyValueConfig{Bucket: DefaultLeaseBucket, Description: "amends: the scheduler's lease", History: 1,
	TTL: DefaultLeaseTTL, LimitMarkerTTL: DefaultLeaseTTL, Replicas: 1})
