package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// ProgressBucket is the KV bucket of Ordered functions' progress: per
// (function, aggregate), under the key of its hold (HoldKey), the last
// version dispatched to the function (handled, or become a hold's head,
// or held). A version is dispatched only right after the one before it,
// whatever order redeliveries, restarts or several instances bring the
// messages in: an earlier version is skipped as done, a later one waits.
const ProgressBucket = "amends_progress"

// maxProgressCache bounds the progress entries an instance caches.
const maxProgressCache = 1 << 16

type progressEntry struct {
	version, rev uint64
	// held: a hold existed when version was dispatched (value "<v>h"), so
	// the next version asks the holds bucket even before this instance's
	// watch shows the hold.
	held bool
	// checked: the version is known not to be ahead of its aggregate
	// (written here, or compared with the aggregate's last version).
	checked bool
	// written is when the revision read from the bucket was written (the
	// server's clock); zero for one this instance wrote.
	written time.Time
}

// progressValue is a stored progress: "<version>" or "<version>h".
type progressValue struct {
	version uint64
	held    bool
	written time.Time // the revision's, when read (not stored)
}

// maxProgressValue bounds a stored progress: 20 digits and "h".
const maxProgressValue = 21

var progressCodec = kvstore.Codec[progressValue]{
	Decode: func(e kvstore.Entry) (progressValue, error) {
		if _, err := parseHoldKey(e.Key); err != nil {
			return progressValue{}, err
		}
		v, err := decodeProgress(e.Value)
		v.written = e.Created
		return v, err
	},
	Encode: func(v progressValue) ([]byte, error) {
		b := strconv.AppendUint(nil, v.version, 10)
		if v.held {
			b = append(b, 'h')
		}
		return b, nil
	},
}

// decodeProgress reads "<version>" or "<version>h": a version from 1,
// written in decimal without a sign or leading zeros.
func decodeProgress(b []byte) (progressValue, error) {
	val, held := bytes.CutSuffix(b, []byte("h"))
	if len(val) == 0 || len(val) > 20 || val[0] == '0' {
		return progressValue{}, kvstore.Invalid("version", "%s is not a version: a progress is a version from 1, in decimal, and h when held", kvstore.Quote(string(b)))
	}
	for _, c := range val {
		if !bounds.Within(c, '0', '9') {
			return progressValue{}, kvstore.Invalid("version", "%s is not a version: a progress is a version from 1, in decimal, and h when held", kvstore.Quote(string(b)))
		}
	}
	v, err := strconv.ParseUint(string(val), 10, 64)
	if err != nil {
		return progressValue{}, kvstore.Invalid("version", "%s is out of range", kvstore.Quote(string(val)))
	}
	return progressValue{version: v, held: held}, nil
}

// progress reads and advances the progress of Ordered functions, with a
// cache of the last revision this instance read or wrote, so that an
// aggregate handled here costs one CAS write per version. Safe for
// concurrent use.
type progress struct {
	store *kvstore.Store[progressValue]
	mu    sync.Mutex
	cache map[string]progressEntry
}

func newProgress(store *kvstore.Store[progressValue]) *progress {
	return &progress{store: store, cache: make(map[string]progressEntry)}
}

func progressSpec(replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{
		Bucket: ProgressBucket, Description: "amends Ordered functions: last version dispatched per (function, aggregate)",
		History: 1, Replicas: max(replicas, 1), Storage: jetstream.FileStorage,
	}, MaxValue: maxProgressValue}
}

func progressBucket(ctx context.Context, js jetstream.JetStream, replicas int, opts ...kvstore.Option) (*kvstore.Store[progressValue], error) {
	b, err := kvstore.Open(ctx, js, progressSpec(replicas), opts...)
	if err != nil {
		return nil, fmt.Errorf("the progress bucket: %w", err)
	}
	return kvstore.For(b, progressCodec), nil
}

// get returns key's progress: from the cache, else the bucket (fresh:
// true to skip the cache). rev 0: no progress yet.
func (pr *progress) get(ctx context.Context, key string, fresh bool) (progressEntry, error) {
	if !fresh {
		pr.mu.Lock()
		e, ok := pr.cache[key]
		pr.mu.Unlock()
		if ok {
			return e, nil
		}
	}
	v, rev, err := pr.store.Get(ctx, key)
	if errors.Is(err, kvstore.ErrNotFound) {
		return progressEntry{}, nil
	}
	if err != nil {
		// A progress that does not validate is quarantined by the store:
		// its events are held (redelivered, never dispatched nor dropped)
		// until it is written again or removed.
		return progressEntry{}, fmt.Errorf("read progress %s: %w", key, err)
	}
	e := progressEntry{version: v.version, rev: rev, held: v.held, written: v.written}
	pr.remember(key, e)
	return e, nil
}

// erased reports whether key's progress was deleted or purged, with the
// revision of the marker that did: amends never removes a progress, so
// an operator or another program did, and it no longer tells what was
// dispatched. Only a redelivery with no progress asks (one read of the
// key's history).
func (pr *progress) erased(ctx context.Context, key string) (uint64, bool, error) {
	hist, err := pr.store.KV().History(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read the history of progress %s: %w", key, err)
	case len(hist) == 0:
		return 0, false, nil
	}
	last := hist[len(hist)-1]
	return last.Revision(), last.Operation() != jetstream.KeyValuePut, nil
}

func (pr *progress) remember(key string, e progressEntry) {
	pr.mu.Lock()
	if len(pr.cache) >= maxProgressCache {
		clear(pr.cache)
	}
	pr.cache[key] = e
	pr.mu.Unlock()
}

func (pr *progress) forget(key string) {
	pr.mu.Lock()
	delete(pr.cache, key)
	pr.mu.Unlock()
}

// advance writes version v for key over e (CAS on its revision; create if
// e.rev is 0). errConflict: another writer moved it; read it fresh.
func (pr *progress) advance(ctx context.Context, key string, e progressEntry, v uint64, held bool) error {
	val := progressValue{version: v, held: held}
	var rev uint64
	var err error
	if e.rev == 0 {
		rev, err = pr.store.Create(ctx, key, val)
	} else {
		rev, err = pr.store.Update(ctx, key, val, e.rev)
	}
	if err != nil {
		pr.forget(key)
		if errors.Is(err, kvstore.ErrConflict) {
			return errProgressMoved
		}
		return fmt.Errorf("write progress %s: %w", key, err)
	}
	pr.remember(key, progressEntry{version: v, rev: rev, held: held, checked: true})
	return nil
}

var errProgressMoved = errors.New("progress moved")
