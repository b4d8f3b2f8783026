package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
)

// Headers amends sets on every stored message, next to the JSON document.
// They let the store find an aggregate's earlier streams by sequence
// without scanning the stream.
const (
	// HeaderVersion is the stream's version.
	HeaderVersion = "Amends-Version"
	// HeaderPrevSeqs lists the sequences of the aggregate's previous streams,
	// newest first, at most maxPrevSeqs of them, comma separated.
	HeaderPrevSeqs = "Amends-Prev-Seqs"
	// HeaderFirstSeq is the sequence of the aggregate's first stream.
	HeaderFirstSeq = "Amends-First-Seq"
)

// maxPrevSeqs is how many previous sequences a message lists: a load of up
// to maxPrevSeqs+1 versions needs no walking, only direct gets sent at once.
const maxPrevSeqs = 16

// rawMsg is a stored message as read back.
type rawMsg struct {
	subject string
	seq     uint64
	header  nats.Header
	data    []byte
}

// pos reads the position headers of a stored message.
func (m *rawMsg) pos() (position, error) {
	v, err := strconv.ParseUint(m.header.Get(HeaderVersion), 10, 64)
	if err != nil || v == 0 {
		return position{}, fmt.Errorf("message %d on %s has no valid %s header: %w", m.seq, m.subject, HeaderVersion, ErrCorrupt)
	}
	p := position{version: v, seq: m.seq, firstSeq: m.seq}
	if v > 1 {
		first, err := strconv.ParseUint(m.header.Get(HeaderFirstSeq), 10, 64)
		p.prevs = m.header.Get(HeaderPrevSeqs)
		if err != nil || first == 0 || first >= m.seq || p.prevs == "" {
			return position{}, fmt.Errorf("message %d on %s has invalid %s/%s headers: %w", m.seq, m.subject, HeaderFirstSeq, HeaderPrevSeqs, ErrCorrupt)
		}
		p.firstSeq = first
	}
	return p, nil
}

// prevSeqs parses the previous-sequence list of a position, newest first,
// and checks it against the version: version v lists min(v-1, maxPrevSeqs)
// sequences, each below the one before.
func (p position) prevSeqs(subject string) ([]uint64, error) {
	want := int(min(p.version-1, maxPrevSeqs))
	out := make([]uint64, 0, want)
	rest, last := p.prevs, p.seq
	for rest != "" {
		var tok string
		tok, rest, _ = strings.Cut(rest, ",")
		n, err := strconv.ParseUint(tok, 10, 64)
		if err != nil || n == 0 || n >= last {
			return nil, fmt.Errorf("message %d on %s has an invalid %s header %q: %w", p.seq, subject, HeaderPrevSeqs, p.prevs, ErrCorrupt)
		}
		out = append(out, n)
		last = n
	}
	if len(out) != want {
		return nil, fmt.Errorf("message %d on %s (version %d) lists %d previous sequences, not %d: %w", p.seq, subject, p.version, len(out), want, ErrCorrupt)
	}
	return out, nil
}

// nextPrevs is the previous-sequence list of the stream appended after p.
func (p position) nextPrevs() string {
	head := strconv.FormatUint(p.seq, 10)
	if p.prevs == "" {
		return head
	}
	rest := p.prevs
	if strings.Count(rest, ",") >= maxPrevSeqs-1 {
		rest = rest[:strings.LastIndexByte(rest, ',')]
	}
	return head + "," + rest
}

// decode turns a stored message into a Stream and checks that its document
// agrees with where it is stored.
func (s *Store) decode(m *rawMsg) (eventstore.Stream, error) {
	st, err := eventstore.Decode(m.data)
	if err != nil {
		return eventstore.Stream{}, fmt.Errorf("message %d on %s: %v: %w", m.seq, m.subject, err, ErrCorrupt)
	}
	p, err := m.pos()
	if err != nil {
		return eventstore.Stream{}, err
	}
	subj, err := subject(s.opts.subjectPrefix, st.Aggregate)
	if err != nil || subj != m.subject || p.version != st.Version {
		return eventstore.Stream{}, fmt.Errorf("message %d on %s holds %s version %d (header version %d): %w",
			m.seq, m.subject, st.Aggregate, st.Version, p.version, ErrCorrupt)
	}
	st.Seq = m.seq
	return st, nil
}

func fromRaw(r *jetstream.RawStreamMsg) *rawMsg {
	return &rawMsg{subject: r.Subject, seq: r.Sequence, header: r.Header, data: r.Data}
}

// lastMsg reads the last message on subj with a direct get.
func (s *Store) lastMsg(ctx context.Context, h *streamHandle, subj string) (*rawMsg, error) {
	r, err := h.stream.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, eventstore.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get last message on %s: %w", subj, err)
	}
	return fromRaw(r), nil
}

// msgAt reads the message with sequence seq with a direct get.
func (s *Store) msgAt(ctx context.Context, h *streamHandle, seq uint64) (*rawMsg, error) {
	r, err := h.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, eventstore.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get message %d of %s: %w", seq, h.name, err)
	}
	return fromRaw(r), nil
}

// leaderLast reads the last message on subj from the stream leader, which
// has every acknowledged write; direct gets may be served by a replica
// that lags behind.
func (s *Store) leaderLast(ctx context.Context, h *streamHandle, subj string) (*rawMsg, error) {
	req, _ := json.Marshal(map[string]string{"last_by_subj": subj})
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	resp, err := s.nc.RequestWithContext(ctx, s.opts.apiPrefix+"STREAM.MSG.GET."+h.name, req)
	if err != nil {
		return nil, fmt.Errorf("get last message on %s from the leader: %w", subj, err)
	}
	var out struct {
		Message *struct {
			Subject string `json:"subject"`
			Seq     uint64 `json:"seq"`
			Header  []byte `json:"hdrs"`
			Data    []byte `json:"data"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		return nil, fmt.Errorf("get last message on %s from the leader: bad response: %w", subj, err)
	}
	if out.Error != nil {
		if out.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, eventstore.ErrNotFound
		}
		return nil, fmt.Errorf("get last message on %s from the leader: %w", subj, out.Error)
	}
	if out.Message == nil {
		return nil, fmt.Errorf("get last message on %s from the leader: empty response", subj)
	}
	m := &rawMsg{subject: out.Message.Subject, seq: out.Message.Seq, data: out.Message.Data}
	if len(out.Message.Header) > 0 {
		if m.header, err = nats.DecodeHeadersMsg(out.Message.Header); err != nil {
			return nil, fmt.Errorf("message %d on %s: headers: %v: %w", m.seq, subj, err, ErrCorrupt)
		}
	}
	return m, nil
}
