package natstest

import (
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LaggingAPI stands between a store and JetStream under the API prefix
// "LAG.API.", and plays a replica that stopped applying writes: once
// frozen, a direct get (which on a cluster any replica may answer) gets
// the answer it got when the replica froze, or "not found" for what came
// after. Everything else, the stream leader's API included, is forwarded
// as it is. That makes a lagging replica happen on every read, on one
// server. Connect a store to it with JetStream and the store's API prefix
// option set to LaggingAPIPrefix.
type LaggingAPI struct {
	nc  *nats.Conn
	srv *Server

	mu     sync.Mutex
	frozen bool
	seen   map[string]*nats.Msg // direct get request -> its last answer
	served int                  // answers given from the frozen replica
	// leaderLag is how many more stream-leader gets (STREAM.MSG.GET) are
	// answered as of the freeze, as by a leader that has not applied the
	// latest writes yet.
	leaderLag int
	cutAt     uint64 // the next batch get stops after this sequence
}

// LaggingAPIPrefix is the JetStream API prefix a LaggingAPI answers on.
const LaggingAPIPrefix = "LAG.API."

func (s *Server) LaggingAPI() *LaggingAPI {
	s.tb.Helper()
	nc, _ := s.Connect()
	l := &LaggingAPI{nc: nc, seen: map[string]*nats.Msg{}}
	_, err := nc.Subscribe(LaggingAPIPrefix+">", l.handle)
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		s.tb.Fatalf("natstest: lagging API: %v", err)
	}
	l.srv = s
	return l
}

func (l *LaggingAPI) handle(m *nats.Msg) {
	real := "$JS.API." + strings.TrimPrefix(m.Subject, LaggingAPIPrefix)
	direct := strings.HasPrefix(real, "$JS.API.DIRECT.GET.")
	single := direct && !strings.Contains(string(m.Data), `"batch"`)
	l.mu.Lock()
	cut := l.cutAt
	if direct && !single {
		l.cutAt = 0
	}
	l.mu.Unlock()
	if direct && !single && cut > 0 {
		l.cutBatch(m, real, cut)
		return
	}
	if strings.HasPrefix(real, "$JS.API.STREAM.MSG.GET.") {
		l.leaderGet(m, real)
		return
	}
	if !single {
		_ = l.nc.PublishMsg(&nats.Msg{Subject: real, Reply: m.Reply, Header: m.Header, Data: m.Data})
		return
	}
	key := real + "|" + string(m.Data)
	l.mu.Lock()
	if l.frozen {
		old, ok := l.seen[key]
		l.served++
		l.mu.Unlock()
		if !ok {
			old = &nats.Msg{Header: nats.Header{"Status": []string{"404"}, "Description": []string{"Message Not Found"}}}
		}
		_ = l.nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: old.Header, Data: old.Data})
		return
	}
	l.mu.Unlock()
	resp, err := l.nc.RequestMsg(&nats.Msg{Subject: real, Header: m.Header, Data: m.Data}, APITimeout)
	if err != nil {
		return
	}
	l.mu.Lock()
	l.seen[key] = resp
	l.mu.Unlock()
	_ = l.nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: resp.Header, Data: resp.Data})
}

// cutBatch answers a batch get as a replica that has applied the stream
// only up to sequence cut: the messages after it are left out and the
// batch ends there.
func (l *LaggingAPI) cutBatch(m *nats.Msg, real string, cut uint64) {
	inbox := nats.NewInbox()
	sub, err := l.nc.SubscribeSync(inbox)
	if err != nil {
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	if l.nc.PublishMsg(&nats.Msg{Subject: real, Reply: inbox, Data: m.Data}) != nil {
		return
	}
	eob := &nats.Msg{Subject: m.Reply, Header: nats.Header{"Status": []string{"204"}, "Description": []string{"EOB"}, "Nats-Num-Pending": []string{"0"}}}
	for {
		r, err := sub.NextMsg(APITimeout)
		if err != nil {
			return
		}
		if r.Header.Get("Status") != "" {
			_ = l.nc.PublishMsg(eob)
			return
		}
		if s, _ := strconv.ParseUint(r.Header.Get("Nats-Sequence"), 10, 64); s > cut {
			_ = l.nc.PublishMsg(eob)
			return
		}
		l.mu.Lock()
		l.served++
		l.mu.Unlock()
		_ = l.nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: r.Header, Data: r.Data})
	}
}

// leaderGet answers a stream-leader get: as of the freeze while the
// leader lags (LeaderLags), else from the leader, remembering the answer.
func (l *LaggingAPI) leaderGet(m *nats.Msg, real string) {
	key := real + "|" + string(m.Data)
	l.mu.Lock()
	if l.leaderLag > 0 {
		l.leaderLag--
		old, ok := l.seen[key]
		l.served++
		l.mu.Unlock()
		data := []byte(`{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","error":{"code":404,"err_code":10037,"description":"no message found"}}`)
		if ok {
			data = old.Data
		}
		_ = l.nc.Publish(m.Reply, data)
		return
	}
	l.mu.Unlock()
	resp, err := l.nc.Request(real, m.Data, APITimeout)
	if err != nil {
		return
	}
	l.mu.Lock()
	l.seen[key] = resp
	l.mu.Unlock()
	_ = l.nc.Publish(m.Reply, resp.Data)
}

// LeaderLags makes the next n stream-leader gets answer as the last
// answer this LaggingAPI saw to the same request (or "no message"), as a
// stream leader does that has not applied a write a consumer already
// delivered from another replica.
func (l *LaggingAPI) LeaderLags(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaderLag = n
}

// CutNextBatch makes the next batch get end after sequence seq, as if
// answered by a replica that has applied no more.
func (l *LaggingAPI) CutNextBatch(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cutAt = seq
}

// Freeze makes the replica stop applying writes.
func (l *LaggingAPI) Freeze() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frozen = true
}

// Served returns how many answers came from the lagging replica.
func (l *LaggingAPI) Served() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.served
}

// JetStream returns a JetStream context on a new connection that sends its
// API requests through the lagging replica.
func (l *LaggingAPI) JetStream() jetstream.JetStream {
	l.srv.tb.Helper()
	nc, _ := l.srv.Connect()
	js, err := jetstream.NewWithAPIPrefix(nc, LaggingAPIPrefix)
	if err != nil {
		l.srv.tb.Fatalf("natstest: jetstream: %v", err)
	}
	return js
}
