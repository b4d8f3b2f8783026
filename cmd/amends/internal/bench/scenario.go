package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Env is where scenarios run: a JetStream connection and the settings of
// the run. Streams and buckets a scenario creates carry Prefix in their
// names and are deleted after it.
type Env struct {
	JS          jetstream.JetStream
	Storage     jetstream.StorageType
	Concurrency int
	// Prefix makes the names of this run's streams unique ("b1a2c3").
	Prefix string
	// Quick asks scenarios for small fixtures: the run only checks that
	// every scenario works and produces a ratio.
	Quick bool
	// Replicas is the replica count of the scenarios' event streams (0 or
	// 1: one). Both sides of a scenario use the same streams.
	Replicas int
	// Records is the size of the large index of the query scenarios (due,
	// list, summary, count), between MinQueryRecords and MaxQueryRecords;
	// 0 means 1M (quick: 100k). They compare it with an index of 10k.
	Records int
	// StoreDir is the JetStream store directory of an embedded server
	// ("" for a server of another process): the footprint reads the
	// streams' files there.
	StoreDir string
	// Dial opens another connection to the same server. The peer sides
	// need their own: Watermill's subscriber drains its connection when it
	// closes. A scenario with a peer side fails to prepare without it.
	Dial func() (*nats.Conn, error)

	indexes *indexCache // the query scenarios' indexes, shared within a run
}

// Pair is a prepared scenario: its sides and how to clean up.
type Pair struct {
	// Raw is the JetStream baseline; nil for a scenario without one.
	Raw Op
	// Floor is the baseline again doing what the amends side must do on
	// top of it, JetStream's floor for the amends side's job: messages as
	// large as amends' (replay: a record's stream document), or each event
	// received and acked as well as recorded (record). nil for none.
	// Before is told "floor"; FloorName names it in the output.
	Floor     Op
	FloorName string
	// Peer is the same job done the way a Go team would build it without
	// amends (a Watermill router on JetStream); nil for none.
	Peer Op
	// Amends is the operation measured.
	Amends Op
	// Close releases fixtures; may be nil.
	Close func()
	// Notes are extra figures to report (e.g. bytes per record).
	Notes map[string]float64
	// Before, if set, runs untimed before every operation of any side
	// ("raw", "floor", "peer" or "amends"), e.g. to publish the messages
	// an operation then consumes; the rate is then computed from the
	// operations' own time.
	Before func(ctx context.Context, side string, worker, i int) error
	// PerOp is how many units (messages, records) one operation handles;
	// rates are per unit. 0 means 1.
	PerOp int
	// RawName and AmendsName name the sides in the output; defaults "raw"
	// and "amends". The peer side is always "peer".
	RawName, AmendsName string
	// Finish, if set, runs once the amends side is measured, for a
	// scenario whose operations are not its units: it may replace the
	// side's rate and latencies with those of the units it counted.
	Finish func(amends *Measurement)
}

// Scenario is one benchmark.
type Scenario struct {
	// Name selects the scenario on the command line ("append").
	Name string
	// Title says what the amends side does.
	Title string
	// Baseline says what the raw side does.
	Baseline string
	// Prepare sets up fixtures for env and returns the two sides.
	Prepare func(ctx context.Context, env *Env) (*Pair, error)
}

var (
	registryMu sync.Mutex
	registry   = map[string]Scenario{}
	order      []string
)

// Register adds a scenario; a duplicate name panics at init time.
func Register(s Scenario) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic("bench: duplicate scenario " + s.Name)
	}
	registry[s.Name] = s
	order = append(order, s.Name)
}

// Scenarios returns the registered scenarios in registration order.
func Scenarios() []Scenario {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Scenario, 0, len(order))
	for _, n := range order {
		out = append(out, registry[n])
	}
	return out
}

// Select returns the named scenarios, all for no names. An unknown name is
// an error that lists the known ones.
func Select(names []string) ([]Scenario, error) {
	all := Scenarios()
	if len(names) == 0 {
		return all, nil
	}
	var out []Scenario
	for _, n := range names {
		s, ok := registry[n]
		if !ok {
			known := make([]string, len(all))
			for i, s := range all {
				known[i] = s.Name
			}
			sort.Strings(known)
			return nil, fmt.Errorf("unknown scenario %q; known scenarios: %s", n, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}
