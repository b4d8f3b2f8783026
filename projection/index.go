package projection

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/quarantine"
)

// HistoryStore is what the Index needs of the event store for History.
// *jsstore.Store satisfies it.
type HistoryStore interface {
	// Load returns the aggregate's streams from version from on, or an
	// error matching eventstore.ErrNotFound.
	Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error)
}

// Index answers queries over every record from memory: an index.Index
// (List, Count, Summary, FingerprintSummary, Due, WaitFor, ...) built
// from the views bucket when Run starts (one read per record, no event
// replay) and kept current by watching the bucket. Several instances may
// each keep their own Index on one bucket.
//
// Queries are safe for concurrent use with each other and with Run; they
// see the records Run has applied so far (see Ready and WaitFor).
type Index struct {
	*index.Index

	views   *Views
	history HistoryStore
	clock   aggregate.Clock
	logger  *slog.Logger
	// checkEvery is how often the watch checks that the bucket is still
	// the one it started on.
	checkEvery time.Duration
	// loadKeys is the number of keys above which an index of some
	// partitions loads through a watch of their keys alone
	// (filteredLoadKeys; tests set it).
	loadKeys uint64
	// restoreKeys is the keys a partition's snapshot must spare reading
	// for the partitions to start from their snapshots (partsnap.go).
	restoreKeys uint64

	mu sync.Mutex // guards gen and corrupt
	// gen counts the watches Run started; every corrupt key remembers the
	// watch that last delivered it, so a restarted watch's initial values
	// can sweep what the bucket no longer holds (the index sweeps its
	// records itself: index.Batch.BeginLoad).
	gen     uint32
	corrupt map[string]corruptKey // keys holding a value that is not a valid view
	// repair is told to reproject the corrupt keys (repair.go).
	repair      chan struct{}
	reprojector Reprojector
	bucket      *kvstore.Bucket // the views, to report the invalid ones
	quarantine  *quarantine.Quarantine

	// snapshots, if set, keeps the index's snapshot (snapshot.go), saved
	// every snapshotEvery.
	snapshots     *Snapshots
	snapshotEvery time.Duration
	// synced: the current watch has delivered the bucket's initial
	// values; rev is the last revision it applied and origin the
	// bucket's creation time (Unix ns): what a snapshot is consistent
	// with. Guarded by mu.
	synced bool
	rev    uint64
	origin int64
	// saveMu makes one SaveSnapshot at a time and guards what the last
	// one saved.
	saveMu       sync.Mutex
	savedRev     uint64
	savedOrigin  int64
	savedParts   string // with WithPartitions, the partitions of the last save
	snapshotSize int    // the last one's size, with room to grow
	// began is when Run started; start how the first load went (under mu).
	began time.Time
	start StartStats

	// auditRate is how many records a second the audit checks (audit.go);
	// suspects are the ids it checks first, audited how many it has.
	auditRate int
	suspects  chan string
	audited   atomic.Int64

	// partitions, if set, gives the partitions whose records the index
	// keeps (partitions.go); loading is the set the current watch keeps,
	// claimed whether its load has ended and no change came since.
	// Guarded by mu.
	partitions PartitionSource
	loading    *partition.Set
	reload     *reload // the current watch's, if it reloads after a change of partitions
	claimed    bool
	unplaced   map[string]uint64 // views read of processors no one holds, since the load began
	placed     map[string]bool   // processors the source placed, asked once a load
	processors map[string]bool   // processors whose key the watch read (ProcessorKey), across loads

	ready     chan struct{}
	readyOnce sync.Once
	health    atomic.Pointer[error] // nil: current
}

// IndexOption configures an Index. An option that cannot be applied makes
// NewIndex return an error wrapping ErrInvalidOption.
type IndexOption func(*Index) error

// WithClock sets the clock that gives "now" to view filters that name no
// time (default: the system clock).
func WithClock(c aggregate.Clock) IndexOption {
	return func(ix *Index) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		ix.clock = c
		return nil
	}
}

// WithIndexLogger sets the logger of the index's watch (default
// slog.Default()): it logs when the watch stops and is restarted.
func WithIndexLogger(l *slog.Logger) IndexOption {
	return func(ix *Index) error {
		if l == nil {
			return fmt.Errorf("logger is nil: %w", ErrInvalidOption)
		}
		ix.logger = l
		return nil
	}
}

// WithBucketCheck sets how often the index checks that the bucket it
// watches is still the one it loaded (default 30s): a bucket deleted and
// created again (the read model rebuilt) continues its sequence numbers
// from 1, which the watch cannot notice by itself; the index then loads
// the new bucket. d must be positive.
func WithBucketCheck(d time.Duration) IndexOption {
	return func(ix *Index) error {
		if d <= 0 {
			return fmt.Errorf("bucket check interval must be positive, got %s: %w", d, ErrInvalidOption)
		}
		ix.checkEvery = d
		return nil
	}
}

// timeNow is the default clock.
var timeNow = time.Now

// NewIndex returns an empty index of the views bucket; Run fills it.
// history serves History; it does no I/O.
func NewIndex(views *Views, history HistoryStore, opts ...IndexOption) (*Index, error) {
	ix := &Index{
		views:       views,
		history:     history,
		clock:       aggregate.ClockFunc(timeNow),
		logger:      slog.Default(),
		checkEvery:  30 * time.Second,
		loadKeys:    filteredLoadKeys,
		restoreKeys: restoreKeys,
		corrupt:     make(map[string]corruptKey),
		repair:      make(chan struct{}, 1),
		suspects:    make(chan string, auditSuspects),
		ready:       make(chan struct{}),
	}
	ix.setHealth(errNotLoaded)
	for _, o := range opts {
		if err := o(ix); err != nil {
			return nil, err
		}
	}
	if ix.auditRate > 0 && ix.reprojector == nil {
		return nil, fmt.Errorf("the audit (WithAudit) needs a reprojector (WithReprojector) to do it: %w", ErrInvalidOption)
	}
	in, err := index.New(index.WithClock(ix.clock))
	if err != nil {
		return nil, err
	}
	ix.Index = in
	if views != nil {
		var opts []kvstore.Option
		if ix.quarantine != nil {
			opts = append(opts, kvstore.WithRecorder(ix.quarantine))
		}
		ix.bucket = kvstore.Bind(nil, views, viewsSpec, append(opts, kvstore.WithLogger(ix.logger))...)
	}
	return ix, nil
}

// Ready returns a channel closed once Run has loaded every view the
// bucket held when it started.
func (ix *Index) Ready() <-chan struct{} { return ix.ready }

// record returns the fields of f as the index reads them.
func (f *viewFields) record() index.Fields[[]byte] {
	return index.Fields[[]byte]{
		ID: f.id, EventID: f.eventID, AggregateID: f.aggregateID, AggregateContext: f.aggContext, AggregateType: f.aggName,
		FunctionKind: f.fnKind, FunctionContext: f.fnContext, Processor: f.fnProcessor, Function: f.fnName,
		ErrorCode: f.errorCode, ErrorMsg: f.errorMsg, Fingerprint: f.fingerprint, Status: f.status, Recoverable: f.recoverable,
		Version: f.version, ExecuteAt: f.executeAt, TimeoutAt: f.timeoutAt, NextRetryAt: f.nextRetryAt,
		Retries: f.retries, MaxRetries: f.maxRetries,
	}
}
