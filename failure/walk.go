package failure

import "github.com/cockroachdb/errors"

// walk visits err and its causes breadth first with their depth (0 for err)
// until visit returns false for every open branch. visit returns whether to
// descend into the node's causes. Both Unwrap() error (and the Cause() of
// older wrappers) and Unwrap() []error are followed. Chains deeper than
// maxDepth are cut off.
func walk(err error, visit func(node error, depth int) bool) {
	const maxDepth = 64
	type item struct {
		err   error
		depth int
	}
	queue := []item{{err, 0}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if it.err == nil || it.depth > maxDepth || !visit(it.err, it.depth) {
			continue
		}
		if multi, ok := it.err.(interface{ Unwrap() []error }); ok {
			for _, c := range multi.Unwrap() {
				queue = append(queue, item{c, it.depth + 1})
			}
			continue
		}
		if c := errors.UnwrapOnce(it.err); c != nil {
			queue = append(queue, item{c, it.depth + 1})
		}
	}
}

// nearest returns the smallest depth at which a node satisfies match, or -1.
func nearest(err error, match func(error) bool) int {
	found := -1
	walk(err, func(node error, d int) bool {
		if found >= 0 && d >= found {
			return false
		}
		if match(node) {
			found = d
			return false
		}
		return true
	})
	return found
}
