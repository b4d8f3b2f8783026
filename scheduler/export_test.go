package scheduler

import "github.com/amends-dev/amends/kvstore"

// The buckets' Specs and codecs, for the store conformance suite.
var (
	ParkReleaseSpec  = parkReleaseSpec
	ParkReleaseCodec = parkReleaseCodec
	LeaseCodec       = leaseCodec
	PartitionsSpec   = partitionsSpec
	PlanCodec        = planCodec
	SizesCodec       = sizesCodec
)

// LeaseValue is a stored lease.
type LeaseValue = leaseValue

// NewLeaseValue returns the lease of holder renewed at ms.
func NewLeaseValue(holder string, ms int64) leaseValue {
	return leaseValue{Holder: holder, RenewedAt: ms}
}

// DefaultLeaseSpec is the lease bucket's Spec with the default settings.
func DefaultLeaseSpec() kvstore.Spec {
	cfg, _ := leaseConfig(nil) // no option, no error
	return leaseSpec(cfg)
}
