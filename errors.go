package amends

import (
	"fmt"

	"github.com/amends-dev/amends/processor"
)

func processorError(msg string) error { return fmt.Errorf("%s: %w", msg, processor.ErrInvalidOption) }
