package rules

// The rules bucket's Spec and codec, for the store conformance suite.
var (
	BucketSpec = bucketSpec
	RuleCodec  = ruleCodec
)
