package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// instance is one `amends serve --partitions` process of the partitions
// bench, on its own HTTP port.
type instance struct {
	name    string
	cmd     *exec.Cmd
	url     string
	client  *client.Client
	started time.Time
	exited  chan struct{} // closed once the process has exited

	mu   sync.Mutex
	tail []string // its last log lines, for errors
}

// maxTail is how many log lines an instance keeps for an error message.
const maxTail = 20

// spawn starts exe serve as instance name against the NATS servers urls
// and returns once its API listens; flags come after the bench's own, and
// override them. The environment's AMENDS_ variables are left out, so
// that only these flags configure it.
func spawn(ctx context.Context, exe, urls, name string, ttl time.Duration, flags ...string) (*instance, error) {
	cmd := exec.Command(exe, append([]string{"serve", "--nats-url", urls, "--replicas", "3", "--partitions", "--instance", name,
		"--http", "127.0.0.1:0", "--lease-ttl", ttl.String(),
		// The views are generated, with no history: no pass prepares
		// them and no audit compares them with histories.
		"--scheduler-initial-delay", "24h", "--index-audit-rate", "0",
		// Every second a snapshot per partition, so that a partition an
		// instance takes over from one killed starts from its snapshot.
		"--index-snapshot-every", "1s",
		"--log-format", "json", "--startup-timeout", "5m"}, flags...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMENDS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	in := &instance{name: name, cmd: cmd, started: time.Now(), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", exe, err)
	}
	urlc := make(chan string, 1)
	go in.read(stderr, urlc)
	go func() { _ = cmd.Wait(); close(in.exited) }()
	select {
	case in.url = <-urlc:
	case <-in.exited:
		return nil, fmt.Errorf("instance %s exited before its API listened:\n%s", name, in.logs())
	case <-ctx.Done():
		in.kill()
		return nil, ctx.Err()
	case <-time.After(5 * time.Minute):
		in.kill()
		return nil, fmt.Errorf("instance %s: its API did not listen within 5m:\n%s", name, in.logs())
	}
	if in.client, err = client.New(in.url, "", nil); err != nil {
		in.kill()
		return nil, err
	}
	return in, nil
}

// read keeps the instance's last log lines and sends the API's URL once
// it is logged.
func (in *instance) read(r io.Reader, urlc chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var rec struct{ Msg, URL string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "HTTP API serving" && rec.URL != "" {
			select {
			case urlc <- rec.URL:
			default:
			}
		}
		in.mu.Lock()
		in.tail = append(in.tail, line)
		if len(in.tail) > maxTail {
			in.tail = in.tail[1:]
		}
		in.mu.Unlock()
	}
}

func (in *instance) logs() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return strings.Join(in.tail, "\n")
}

// kill ends the process with SIGKILL, as kill -9, and waits for it.
func (in *instance) kill() {
	_ = in.cmd.Process.Kill()
	<-in.exited
}

// stop asks the process to stop (SIGINT: it releases its leases) and
// kills it if it has not within 30s.
func (in *instance) stop() {
	_ = in.cmd.Process.Signal(os.Interrupt)
	select {
	case <-in.exited:
	case <-time.After(30 * time.Second):
		in.kill()
	}
}

// get reads path of the instance's API.
func (in *instance) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.url+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, body, err
}

// ready reports whether /readyz answers 200: the instance's index has
// loaded.
func (in *instance) ready(ctx context.Context) bool {
	status, _, err := in.get(ctx, "/readyz")
	return err == nil && status == http.StatusOK
}

// isMissing reports whether err is the API's answer that partitions are
// missing (503 PartitionsMissing).
func isMissing(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == http.StatusServiceUnavailable && e.Body.Code == "PartitionsMissing"
}

// answersAll reports whether the instance counts n records in full.
func (in *instance) answersAll(ctx context.Context, n int) bool {
	got, err := in.client.Count(ctx, api.Filter{})
	return err == nil && got == n
}

// sample reads the records the instance's index holds (the sum of
// amends_records), the live heap after its last GC
// (go_gc_heap_live_bytes) and the GCs it ran (go_gc_duration_seconds_count)
// from its metrics.
func (in *instance) sample(ctx context.Context) (held int, live uint64, gcs int, err error) {
	status, body, err := in.get(ctx, "/metrics")
	if err != nil || status != http.StatusOK {
		return 0, 0, 0, fmt.Errorf("instance %s: metrics: status %d: %v", in.name, status, err)
	}
	found := false
	for line := range strings.SplitSeq(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, perr := strconv.ParseFloat(value, 64)
		switch {
		case perr != nil:
		case strings.HasPrefix(name, "amends_records{"):
			held += int(v)
		case name == "go_gc_heap_live_bytes":
			live, found = uint64(v), true
		case name == "go_gc_duration_seconds_count":
			gcs = int(v)
		}
	}
	if !found {
		return held, 0, 0, errors.New("the metrics have no go_gc_heap_live_bytes")
	}
	return held, live, gcs, nil
}

// settledHeap returns the records the instance holds and its live heap at
// a GC that ran while it answered nothing larger than a page of 50: it
// asks for pages until the instance has collected once more (their
// garbage makes it), so that the live heap is its index's and not that of
// a load or a query in flight.
func (in *instance) settledHeap(ctx context.Context) (held int, live uint64, err error) {
	_, _, before, err := in.sample(ctx)
	if err != nil {
		return 0, 0, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := in.client.List(ctx, api.Query{Limit: 50}); err != nil {
			return 0, 0, fmt.Errorf("instance %s: %w", in.name, err)
		}
		held, live, gcs, err := in.sample(ctx)
		if err != nil || gcs > before {
			return held, live, err
		}
		if time.Now().After(deadline) {
			return held, live, fmt.Errorf("instance %s ran no GC within 2m of pages asked", in.name)
		}
	}
}
