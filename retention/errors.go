package retention

import "errors"

// ErrInvalidOption reports a Config, or an Open argument, out of bounds;
// the message names the field and the limit.
var ErrInvalidOption = errors.New("retention: invalid option")
