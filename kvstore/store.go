package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/wait"
)

// Entry is a stored value as a decoder sees it.
type Entry struct {
	Bucket, Key string
	Revision    uint64
	Value       []byte
	// Created is when the revision was written (the server's clock).
	Created time.Time
	// Now is the bucket's clock at the read: the time decoders compare
	// times with.
	Now time.Time
}

// Codec reads and writes the values of a bucket as T.
type Codec[T any] struct {
	// Decode validates e, its key included, and returns its value; an
	// error is a *FieldError (Invalid) naming the field, or any error
	// about the value as a whole. With Ignore's error, the value returned
	// is kept (the field dropped) and the entry reported. Decode must not
	// panic on any input.
	Decode func(e Entry) (T, error)
	// Encode returns the bytes stored for v (nil: encoding/json).
	Encode func(v T) ([]byte, error)
}

// Store reads and writes the values of one bucket as T. Safe for
// concurrent use.
type Store[T any] struct {
	*Bucket
	codec Codec[T]
}

// For returns the typed store of b with codec c.
func For[T any](b *Bucket, c Codec[T]) *Store[T] {
	if c.Encode == nil {
		c.Encode = func(v T) ([]byte, error) { return json.Marshal(v) }
	}
	return &Store[T]{Bucket: b, codec: c}
}

// decode validates a stored value: its size, then the codec's decoder. A
// refusal is reported (once per revision) and returned as an
// *InvalidError.
func (s *Store[T]) decode(ctx context.Context, key string, rev uint64, value []byte, created time.Time) (T, error) {
	var zero T
	e := Entry{Bucket: s.Name(), Key: key, Revision: rev, Value: value, Created: created, Now: s.now()}
	var err error
	if max := s.spec.maxValue(); len(value) > max {
		err = Invalid("", "the value is %d bytes, over the limit of %d", len(value), max)
	} else if kerr := ValidKey(key); kerr != nil {
		err = Invalid("key", "%s", trimSentinel(kerr, ErrInvalidKey))
	} else {
		var v T
		if v, err = s.safeDecode(e); err == nil {
			return v, nil
		}
		var fe *FieldError
		if errors.As(err, &fe) && fe.ignored {
			s.rep.report(ctx, invalidAt(s.Name(), key, rev, err))
			return v, nil
		}
	}
	ie := invalidAt(s.Name(), key, rev, err)
	s.rep.report(ctx, ie)
	return zero, ie
}

// safeDecode runs the decoder, turning a panic into an invalid entry: a
// decoder is written never to panic, and this is the net under it.
func (s *Store[T]) safeDecode(e Entry) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Invalid("", "the decoder failed on it: %v", r)
		}
	}()
	return s.codec.Decode(e)
}

func trimSentinel(err, sentinel error) string {
	msg := err.Error()
	if suffix := ": " + sentinel.Error(); len(msg) > len(suffix) && msg[len(msg)-len(suffix):] == suffix {
		return msg[:len(msg)-len(suffix)]
	}
	return msg
}

// DecodeEntry validates an entry a watch of the bucket delivered (a put;
// a deletion has no value to decode). Errors as Get's.
func (s *Store[T]) DecodeEntry(ctx context.Context, e jetstream.KeyValueEntry) (T, error) {
	return s.decode(ctx, e.Key(), e.Revision(), e.Value(), e.Created())
}

// Get returns key's value and revision. Errors: ErrNotFound (no value),
// an *InvalidError (ErrInvalid) for a value that does not validate,
// ErrInvalidKey for a key that is not one, or JetStream's.
func (s *Store[T]) Get(ctx context.Context, key string) (T, uint64, error) {
	var zero T
	if err := ValidKey(key); err != nil {
		return zero, 0, fmt.Errorf("bucket %s: %w", s.Name(), err)
	}
	e, err := s.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return zero, 0, fmt.Errorf("bucket %s key %s: %w", s.Name(), QuoteKey(key), ErrNotFound)
	case err != nil:
		return zero, 0, fmt.Errorf("bucket %s: read %s: %w", s.Name(), QuoteKey(key), err)
	}
	v, err := s.decode(ctx, key, e.Revision(), e.Value(), e.Created())
	return v, e.Revision(), err
}

func (s *Store[T]) encode(key string, v T) ([]byte, error) {
	if err := ValidKey(key); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", s.Name(), err)
	}
	b, err := s.codec.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: encode %s: %w", s.Name(), key, err)
	}
	if max := s.spec.maxValue(); len(b) > max {
		return nil, fmt.Errorf("bucket %s: the value of %s is %d bytes, over the limit of %d: %w", s.Name(), key, len(b), max, ErrTooLarge)
	}
	return b, nil
}

// IsConflict reports whether err is a compare-and-set that found another
// revision: jetstream.ErrKeyRevisionMismatch, or the API error codes
// 10071 (single replica) and 10164 (replicated), which Create reports as
// jetstream.ErrKeyExists.
func IsConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrConflict) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func (s *Store[T]) writeErr(op, key string, err error) error {
	if IsConflict(err) {
		return fmt.Errorf("bucket %s: %s %s: %w (%w)", s.Name(), op, QuoteKey(key), ErrConflict, err)
	}
	return fmt.Errorf("bucket %s: %s %s: %w", s.Name(), op, QuoteKey(key), err)
}

// Create writes v under key if key has no value, and returns the
// revision. A key with a value is ErrConflict.
func (s *Store[T]) Create(ctx context.Context, key string, v T) (uint64, error) {
	b, err := s.encode(key, v)
	if err != nil {
		return 0, err
	}
	rev, err := s.kv.Create(ctx, key, b)
	if err != nil {
		return 0, s.writeErr("create", key, err)
	}
	return rev, nil
}

// Put writes v under key whatever is there, and returns the revision.
func (s *Store[T]) Put(ctx context.Context, key string, v T) (uint64, error) {
	b, err := s.encode(key, v)
	if err != nil {
		return 0, err
	}
	rev, err := s.kv.Put(ctx, key, b)
	if err != nil {
		return 0, s.writeErr("put", key, err)
	}
	return rev, nil
}

// Update writes v under key if key is still at revision rev, and returns
// the new revision; ErrConflict if not.
func (s *Store[T]) Update(ctx context.Context, key string, v T, rev uint64) (uint64, error) {
	b, err := s.encode(key, v)
	if err != nil {
		return 0, err
	}
	next, err := s.kv.Update(ctx, key, b, rev)
	if err != nil {
		return 0, s.writeErr("update", key, err)
	}
	return next, nil
}

// Delete deletes key's value, if key is still at revision rev (0: whatever
// it is at); ErrConflict if not. Deleting a key without a value writes a
// deletion all the same.
func (s *Store[T]) Delete(ctx context.Context, key string, rev uint64) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("bucket %s: %w", s.Name(), err)
	}
	var opts []jetstream.KVDeleteOpt
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	if err := s.kv.Delete(ctx, key, opts...); err != nil {
		return s.writeErr("delete", key, err)
	}
	return nil
}

// Action is what a Change's function does with the key.
type Action int

// The actions.
const (
	Keep   Action = iota // write nothing
	Write                // write the value returned
	Remove               // delete the key
)

// Current is a key's value as Change read it.
type Current[T any] struct {
	// Value is the value; the zero T when the key has none or an invalid
	// one.
	Value T
	// Revision is the revision read: 0 when the key has no value.
	Revision uint64
	// Invalid is the stored value's refusal, when it did not validate (it
	// was reported). Writing over it replaces it; Keep leaves it.
	Invalid *InvalidError
}

// Exists reports whether the key has a valid value.
func (c Current[T]) Exists() bool { return c.Revision != 0 && c.Invalid == nil }

// DefaultAttempts bounds how often Change reads and tries again after a
// conflict.
const DefaultAttempts = 100

// pause is what Change does before its attempt n (0-based): after three
// lost races it waits a little, so that the other writers spread out and
// a replica that served a stale read catches up. It returns ctx's error
// once ctx has ended.
func pause(ctx context.Context, n int) error {
	if n > 2 {
		return wait.Backoff(ctx, n-2)
	}
	return ctx.Err()
}

// Change reads key, calls fn with what it holds and does what fn says,
// with a compare-and-set on the revision read (a create when the key has
// no value), and again from the read when another writer moved the key
// in between, at most DefaultAttempts times (then ErrConflict); after the
// third read it waits before each, a random while growing to 50 ms. It returns
// the value and revision written (or, for Keep, read; for Remove, the
// value read and revision 0). An error of fn is returned as it is, with
// nothing written. Change never calls fn with a value that did not
// validate: Current.Invalid says so instead. Errors: fn's, ErrConflict,
// ErrTooLarge, JetStream's.
func (s *Store[T]) Change(ctx context.Context, key string, fn func(cur Current[T]) (T, Action, error)) (T, uint64, error) {
	var zero T
	for attempt := 0; attempt < DefaultAttempts; attempt++ {
		if err := pause(ctx, attempt); err != nil {
			return zero, 0, err
		}
		var cur Current[T]
		v, rev, err := s.Get(ctx, key)
		var ie *InvalidError
		switch {
		case err == nil:
			cur = Current[T]{Value: v, Revision: rev}
		case errors.Is(err, ErrNotFound):
		case errors.As(err, &ie):
			cur = Current[T]{Revision: rev, Invalid: ie}
		default:
			return zero, 0, err
		}
		next, act, err := fn(cur)
		if err != nil {
			return cur.Value, cur.Revision, err
		}
		switch act {
		case Keep:
			return cur.Value, cur.Revision, nil
		case Remove:
			if cur.Revision == 0 {
				return cur.Value, 0, nil
			}
			err = s.Delete(ctx, key, cur.Revision)
			if err == nil {
				return cur.Value, 0, nil
			}
		case Write:
			var w uint64
			if cur.Revision == 0 {
				w, err = s.Create(ctx, key, next)
			} else {
				w, err = s.Update(ctx, key, next, cur.Revision)
			}
			if err == nil {
				return next, w, nil
			}
		default:
			return zero, 0, fmt.Errorf("bucket %s: change %s: unknown action %d", s.Name(), QuoteKey(key), act)
		}
		if !errors.Is(err, ErrConflict) {
			return zero, 0, err
		}
	}
	return zero, 0, fmt.Errorf("bucket %s: change %s: the key kept changing through %d attempts: %w", s.Name(), QuoteKey(key), DefaultAttempts, ErrConflict)
}
