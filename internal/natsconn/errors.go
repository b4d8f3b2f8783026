package natsconn

import "errors"

// ErrInvalidConfig reports a setting of EmbeddedConfig or ClientConfig that
// cannot be used. The wrapping message names the setting, its value and
// what is expected.
var ErrInvalidConfig = errors.New("natsconn: invalid config")
