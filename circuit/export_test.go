package circuit

// The buckets' codecs and the drains' Spec, for the store conformance
// suite.
var (
	StateCodec = codec
	DrainCodec = drainCodec
	DrainSpec  = drainSpec
)
