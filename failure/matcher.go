package failure

import (
	"fmt"
	"reflect"
)

// Matcher tests one error of a chain (not its causes). Build one with Is
// or As.
type Matcher interface {
	// MatchNode reports whether node itself matches.
	MatchNode(node error) bool
	// String describes the matcher for messages.
	String() string
}

// Is matches an error equal to target, or one whose Is method reports
// target: the node-level part of errors.Is. A nil target matches nothing.
func Is(target error) Matcher { return isMatcher{target} }

type isMatcher struct{ target error }

func (m isMatcher) MatchNode(node error) bool {
	if m.target == nil || node == nil {
		return false
	}
	if reflect.TypeOf(m.target).Comparable() && node == m.target {
		return true
	}
	if x, ok := node.(interface{ Is(error) bool }); ok {
		return x.Is(m.target)
	}
	return false
}

func (m isMatcher) String() string { return fmt.Sprintf("Is(%v)", m.target) }

// As matches an error of type T, or one whose As method yields a T: the
// node-level part of errors.As. T is usually a pointer type
// (failure.As[*net.OpError]()) or an interface.
func As[T error]() Matcher { return asMatcher[T]{} }

type asMatcher[T error] struct{}

func (asMatcher[T]) MatchNode(node error) bool {
	if _, ok := node.(T); ok {
		return true
	}
	if x, ok := node.(interface{ As(any) bool }); ok {
		var t T
		return x.As(&t)
	}
	return false
}

func (asMatcher[T]) String() string {
	return fmt.Sprintf("As[%s]", reflect.TypeFor[T]())
}

// depthOf returns the nearest depth at which any of ms matches, or -1.
func depthOf(err error, ms []Matcher) int {
	if len(ms) == 0 {
		return -1
	}
	return nearest(err, func(node error) bool {
		for _, m := range ms {
			if m.MatchNode(node) {
				return true
			}
		}
		return false
	})
}
