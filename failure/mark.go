package failure

import (
	"github.com/cockroachdb/errors"
)

// The references the marks point at. cockroachdb/errors compares marks by
// type and message too, so the messages are unique to amends.
var (
	recoverableMark   = errors.New("amends/failure: marked recoverable")
	unrecoverableMark = errors.New("amends/failure: marked unrecoverable")
)

// Recoverable returns err marked RECOVERABLE: Classify reports RECOVERABLE
// unless a function rule or the registry says otherwise. The message and
// the chain (errors.Is / errors.As) are unchanged; nil stays nil.
func Recoverable(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, recoverableMark)
}

// Unrecoverable returns err marked UNRECOVERABLE: retrying will not help,
// so the processor does not retry it at once and the scheduler leaves its
// record to operators. nil stays nil.
func Unrecoverable(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, unrecoverableMark)
}

// markDepth returns the depth of the outermost node that carries mark, or
// -1. A node carries the mark when it reports the mark and its cause does
// not.
func markDepth(err, mark error) int {
	depth := -1
	walk(err, func(node error, d int) bool {
		if !errors.Is(node, mark) {
			return false // nothing below either
		}
		if _, multi := node.(interface{ Unwrap() []error }); multi {
			return true
		}
		if cause := errors.UnwrapOnce(node); cause == nil || !errors.Is(cause, mark) {
			depth = d
			return false
		}
		return true
	})
	return depth
}
