package processor

// The buckets' Specs and codecs, for the store conformance suite.
var (
	HoldSpec      = holdSpec
	HoldCodec     = holdCodec
	BuildCodec    = buildCodec
	ReplaySpec    = replaySpec
	ReplayCodec   = replayCodec
	SnapshotCodec = snapshotCodec
	ProgressSpec  = progressSpec
	ProgressCodec = progressCodec
	BuildKey      = buildKey
)

// ProgressValue is a stored progress as the conformance suite sees it.
type ProgressValue = progressValue

// NewProgressValue returns the progress of version, held or not.
func NewProgressValue(version uint64, held bool) progressValue {
	return progressValue{version: version, held: held}
}

// ProgressOf returns what a progress value stores.
func ProgressOf(v progressValue) (uint64, bool) { return v.version, v.held }

// MaxSnapshotValue is the bound the snapshot store reads with.
const MaxSnapshotValue = maxSnapshotValue
