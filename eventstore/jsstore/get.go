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
	"github.com/amends-dev/amends/tracing"
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

// pos reads the position headers of a stored message and checks that they
// are consistent with where it is stored: versions 1 to v of an aggregate
// are v messages with sequences from the first stream's to this one's, so
// no version is larger than that range. Nothing read here may size an
// allocation beyond what that check allows.
func (m *rawMsg) pos() (position, error) {
	raw := m.header.Get(HeaderVersion)
	v, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || v == 0 {
		return position{}, fmt.Errorf("message %d on %s has no valid %s header (%q; versions are integers from 1): %w", m.seq, m.subject, HeaderVersion, clip(raw), eventstore.ErrCorrupt)
	}
	p := position{version: v, seq: m.seq, firstSeq: m.seq}
	if v > 1 {
		rawFirst := m.header.Get(HeaderFirstSeq)
		first, err := strconv.ParseUint(rawFirst, 10, 64)
		if err != nil || first == 0 || first >= m.seq {
			return position{}, fmt.Errorf("message %d on %s (version %d) has an invalid %s header %q: the first stream's sequence must be from 1 to %d: %w",
				m.seq, m.subject, v, HeaderFirstSeq, clip(rawFirst), m.seq-min(m.seq, 1), eventstore.ErrCorrupt)
		}
		if v-1 > m.seq-first {
			return position{}, fmt.Errorf("message %d on %s has %s %d, more than the %d messages from %s %d to it can hold: %w",
				m.seq, m.subject, HeaderVersion, v, m.seq-first+1, HeaderFirstSeq, first, eventstore.ErrCorrupt)
		}
		p.prevs = m.header.Get(HeaderPrevSeqs)
		if p.prevs == "" {
			return position{}, fmt.Errorf("message %d on %s (version %d) has no %s header: %w", m.seq, m.subject, v, HeaderPrevSeqs, eventstore.ErrCorrupt)
		}
		p.firstSeq = first
		var buf [maxPrevSeqs]uint64
		prevs, err := p.parsePrevs(m.subject, buf[:0])
		if err != nil {
			return position{}, err
		}
		p.prevSeq = prevs[0] // version v-1's: parsePrevs checked there is one
	}
	return p, nil
}

// clip shortens a header value quoted in an error.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// prevSeqs parses the previous-sequence list of a position, newest first.
func (p position) prevSeqs(subject string) ([]uint64, error) {
	return p.parsePrevs(subject, make([]uint64, 0, maxPrevSeqs))
}

// parsePrevs appends the previous-sequence list of p to out, newest first,
// and checks it against the version: version v lists min(v-1, maxPrevSeqs)
// sequences, each below the one before and none below the first stream's,
// the last one the first stream's if the list reaches back to version 1.
// It never appends more than maxPrevSeqs.
func (p position) parsePrevs(subject string, out []uint64) ([]uint64, error) {
	want := int(min(p.version-1, maxPrevSeqs))
	rest, last, n0 := p.prevs, p.seq, len(out)
	ok := true
	for ok && rest != "" {
		var tok string
		tok, rest, _ = strings.Cut(rest, ",")
		n, err := strconv.ParseUint(tok, 10, 64)
		ok = err == nil && n >= p.firstSeq && n < last && len(out)-n0 < want
		out = append(out, n)
		last = n
	}
	got := out[n0:]
	if !ok || len(got) != want || (want > 0 && p.version-1 <= maxPrevSeqs && got[want-1] != p.firstSeq) {
		return nil, fmt.Errorf("message %d on %s (version %d) has an invalid %s header %q: it lists %d sequences, each below the one before, from %d (%s): %w",
			p.seq, subject, p.version, HeaderPrevSeqs, clip(p.prevs), want, p.firstSeq, HeaderFirstSeq, eventstore.ErrCorrupt)
	}
	return out, nil
}

// at checks that m, read by sequence for the aggregate on subj whose first
// stream is at sequence first, is that aggregate's version v.
func (m *rawMsg) at(subj string, first, v uint64) error {
	if m.subject != subj {
		return fmt.Errorf("%s: version %d should be at sequence %d, which holds a message on %s: %w", subj, v, m.seq, m.subject, eventstore.ErrCorrupt)
	}
	p, err := m.pos()
	if err != nil {
		return err
	}
	if p.version != v || p.firstSeq != first {
		return fmt.Errorf("message %d on %s has %s %d and %s %d, not version %d of the aggregate whose first stream is at %d: %w",
			m.seq, subj, HeaderVersion, p.version, HeaderFirstSeq, p.firstSeq, v, first, eventstore.ErrCorrupt)
	}
	return nil
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
	st, _, err := s.decodeAt(m)
	return st, err
}

// decodeAt is decode that also returns the message's position.
func (s *Store) decodeAt(m *rawMsg) (eventstore.Stream, position, error) {
	st, err := eventstore.Decode(m.data)
	if err != nil {
		return eventstore.Stream{}, position{}, fmt.Errorf("message %d on %s: %v: %w", m.seq, m.subject, err, eventstore.ErrCorrupt)
	}
	p, err := m.pos()
	if err != nil {
		return eventstore.Stream{}, position{}, err
	}
	subj, err := subject(s.opts.subjectPrefix, st.Aggregate)
	if err != nil || subj != m.subject || p.version != st.Version {
		return eventstore.Stream{}, position{}, fmt.Errorf("message %d on %s holds %s version %d (header version %d): %w",
			m.seq, m.subject, st.Aggregate, st.Version, p.version, eventstore.ErrCorrupt)
	}
	st.Seq, st.PrevSeq = m.seq, p.prevSeq
	st.TraceParent, st.TraceState = tracing.Header(m.header)
	return st, p, nil
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

// msgAt reads the message with sequence seq with a direct get. A replica
// that lags the leader may not hold seq yet, so a direct get that finds
// nothing asks the stream leader before reporting eventstore.ErrNotFound.
func (s *Store) msgAt(ctx context.Context, h *streamHandle, seq uint64) (*rawMsg, error) {
	r, err := h.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		m, err := s.leaderGet(ctx, h, leaderRequest{Seq: seq})
		if err == nil {
			s.laggingReads.Add(1)
		}
		return m, err
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
	return s.leaderGet(ctx, h, leaderRequest{LastBySubject: subj})
}

// leaderRequest is a message get answered by the stream leader: by
// sequence or the last on a subject.
type leaderRequest struct {
	Seq           uint64 `json:"seq,omitempty"`
	LastBySubject string `json:"last_by_subj,omitempty"`
}

func (r leaderRequest) String() string {
	if r.LastBySubject != "" {
		return "last message on " + r.LastBySubject
	}
	return "message " + strconv.FormatUint(r.Seq, 10)
}

// leaderGet reads one message through the JetStream API, which only the
// stream leader answers. It returns an error matching eventstore.ErrNotFound
// if there is no such message.
func (s *Store) leaderGet(ctx context.Context, h *streamHandle, lr leaderRequest) (*rawMsg, error) {
	req, _ := json.Marshal(lr)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	resp, err := s.nc.RequestWithContext(ctx, s.opts.apiPrefix+"STREAM.MSG.GET."+h.name, req)
	if err != nil {
		return nil, fmt.Errorf("get %s of %s from the leader: %w", lr, h.name, err)
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
		return nil, fmt.Errorf("get %s of %s from the leader: bad response: %w", lr, h.name, err)
	}
	if out.Error != nil {
		if out.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, eventstore.ErrNotFound
		}
		return nil, fmt.Errorf("get %s of %s from the leader: %w", lr, h.name, out.Error)
	}
	if out.Message == nil {
		return nil, fmt.Errorf("get %s of %s from the leader: empty response", lr, h.name)
	}
	if lr.Seq != 0 && out.Message.Seq != lr.Seq {
		return nil, fmt.Errorf("get %s of %s from the leader: answered with message %d: %w", lr, h.name, out.Message.Seq, eventstore.ErrCorrupt)
	}
	m := &rawMsg{subject: out.Message.Subject, seq: out.Message.Seq, data: out.Message.Data}
	if len(out.Message.Header) > 0 {
		if m.header, err = nats.DecodeHeadersMsg(out.Message.Header); err != nil {
			return nil, fmt.Errorf("message %d on %s: headers: %v: %w", m.seq, m.subject, err, eventstore.ErrCorrupt)
		}
	}
	return m, nil
}
