package notify

import "errors"

// Sentinel errors; match them with errors.Is.
var (
	// ErrInvalidConfig: a notification setting is out of its rules. The
	// message names the field, the value's problem and the limit.
	ErrInvalidConfig = errors.New("invalid notification config")
	// ErrRefused: the SSRF guard refused a destination (a scheme other
	// than http or https, an address in a refused range, a redirect).
	ErrRefused = errors.New("refused by the SSRF guard")
	// ErrBadSignature: a request's signature, body hash or timestamp does
	// not verify.
	ErrBadSignature = errors.New("signature does not verify")
	// ErrDelivery: an endpoint did not answer with a success status.
	ErrDelivery = errors.New("delivery failed")
)
