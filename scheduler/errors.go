package scheduler

import "errors"

// Sentinels matched with errors.Is.
var (
	// ErrInvalidOption: an option value a constructor cannot use. The
	// wrapping message names the option and the rule.
	ErrInvalidOption = errors.New("scheduler: invalid option")
	// ErrIncompatibleBucket: the lease bucket exists with settings other
	// than the ones asked for; amends never reconfigures it.
	ErrIncompatibleBucket = errors.New("scheduler: incompatible lease bucket")
	// ErrInstanceTaken: another process holds the member lease of this
	// instance's name (Partitions.Join).
	ErrInstanceTaken = errors.New("scheduler: the instance's member lease is held by another process")
)
