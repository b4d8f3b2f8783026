package recorder

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/rules"
)

// Option configures a Recorder. An option that cannot be applied makes New
// return an error wrapping ErrInvalidOption.
type Option func(*options) error

type options struct {
	retries int
	backoff processor.Backoff
	sleep   processor.Sleeper
	clock   aggregate.Clock
	actor   string
	module  string
	rules   rules.Matcher
}

// DefaultSendBackoff is the backoff between sends: 1 s doubling to at most
// 10 s, jitter 0.5.
var DefaultSendBackoff = processor.Backoff{Min: time.Second, Max: 10 * time.Second, Jitter: 0.5}

// DefaultSendRetries is how many times a failed send is retried: 3, as the
// reference's recorder does ("重试 3 次"), so at most 4 sends.
const DefaultSendRetries = 3

func defaultOptions() options {
	return options{
		retries: DefaultSendRetries,
		backoff: DefaultSendBackoff,
		sleep:   processor.Sleep,
		clock:   aggregate.ClockFunc(time.Now),
		actor:   "recorder",
		module:  mainModule(),
	}
}

// mainModule is the module path of the running binary, "" if unknown.
func mainModule() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Path
	}
	return ""
}

// WithModule sets the module whose first stack frame goes into a
// failure's fingerprint (default: the main module of the binary, from its
// build info; "" takes the first frame outside the standard library).
func WithModule(module string) Option {
	return func(o *options) error { o.module = module; return nil }
}

// WithRules makes the recorder act on each new failure with the rule m
// finds for it (a *rules.Watcher, which counts the matches, or a fixed
// *rules.Set): the creation gets the rule's classification or retry spec
// (see rules.ApplyToCreate), the rule id in the header "rule" and the
// rule's action and reason as the command's reason. Matching is in
// memory: no round trip per failure.
func WithRules(m rules.Matcher) Option {
	return func(o *options) error {
		if m == nil {
			return fmt.Errorf("rules matcher is nil: %w", ErrInvalidOption)
		}
		o.rules = m
		return nil
	}
}

// WithSendRetry sets how many times a failed send is retried and the
// backoff between sends (default DefaultSendRetries, DefaultSendBackoff).
func WithSendRetry(retries int, b processor.Backoff) Option {
	return func(o *options) error {
		if retries < 0 {
			return fmt.Errorf("send retries must be >= 0, got %d: %w", retries, ErrInvalidOption)
		}
		o.retries, o.backoff = retries, b
		return nil
	}
}

// WithSleeper sets how the recorder waits between sends (default
// processor.Sleep); tests inject one that returns at once.
func WithSleeper(s processor.Sleeper) Option {
	return func(o *options) error {
		if s == nil {
			return fmt.Errorf("sleeper is nil: %w", ErrInvalidOption)
		}
		o.sleep = s
		return nil
	}
}

// WithClock sets the clock used when an execution carries no time
// (default the system clock).
func WithClock(c aggregate.Clock) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		o.clock = c
		return nil
	}
}

// WithActor sets the actor stored with every command (default "recorder").
func WithActor(actor string) Option {
	return func(o *options) error { o.actor = actor; return nil }
}
