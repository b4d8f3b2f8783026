package fanout

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/token"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection"
)

// DefaultPrefix starts the subject every Responder answers on:
// <prefix>.<instance>.
const DefaultPrefix = "amends.query"

// MaxRequestBytes bounds a request: a query is a filter of short names, a
// sort, a limit and a cursor, well under it.
const MaxRequestBytes = 16 << 10

// Errors. Every error of this package matches one of them (errors.Is) and
// says which value is at fault.
var (
	// ErrInvalidOption: a configuration that cannot be used.
	ErrInvalidOption = errors.New("invalid fanout option")
	// ErrBadReply: an instance's reply that cannot be read, or that
	// claims a partition another instance also claims.
	ErrBadReply = errors.New("bad reply from an instance")
)

// The operations a request asks for.
const (
	opList         = "list"
	opCount        = "count"
	opSummary      = "summary"
	opFingerprints = "fingerprints"
	opWait         = "wait"
)

// request is what a Querier sends. Count and Summary read the query's
// filter only; Wait reads ID, Version and Wait, and no query.
type request struct {
	Op    string    `json:"op"`
	Query api.Query `json:"query"`
	// ID and Version are the record and the version a wait is for; Wait
	// bounds it, in milliseconds (at most MaxWait).
	ID      string `json:"id,omitempty"`
	Version uint64 `json:"version,omitempty"`
	Wait    int64  `json:"wait_ms,omitempty"`
}

// MaxWait bounds how long a responder waits for a record to reach a
// version (Querier.WaitFor).
const MaxWait = 30 * time.Second

// reply is what a Responder answers: the partitions its index holds and
// the answer for the request's op, or an error.
type reply struct {
	Partitions []string     `json:"partitions"`
	Unplaced   []string     `json:"unplaced,omitempty"`
	Page       *api.Page    `json:"page,omitempty"`
	Count      *int         `json:"count,omitempty"`
	Summary    *api.Summary `json:"summary,omitempty"`
	// Fingerprints answers a fingerprints request (an empty list too).
	Fingerprints *[]api.FingerprintGroup `json:"fingerprints,omitzero"`
	// Reached answers a wait: the index holds the record at the version.
	Reached *bool       `json:"reached,omitempty"`
	Error   *replyError `json:"error,omitempty"`
}

// replyError is why a Responder did not answer.
type replyError struct {
	// Kind is errInvalidQuery (the query is the asker's fault: every
	// instance would refuse it), errMoved (the index's partitions changed
	// while it answered), errLoading (it is loading them), errTooLarge or
	// errFailed.
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

const (
	errInvalidQuery = "invalid_query"
	errMoved        = "moved"
	errLoading      = "loading"
	errFailed       = "failed"
	errTooLarge     = "too_large"
	errBusy         = "busy"
	errTimeout      = "timeout"
)

// instanceTokens encodes an instance's name into a subject token.
var instanceTokens = token.Codec{Mark: '='}

// subjectOf returns the subject instance answers on, or an error for an
// instance name that cannot be one (empty, or over 256 bytes).
func subjectOf(prefix, instance string) (string, error) {
	if len(instance) > maxInstance {
		return "", fmt.Errorf("instance name %.20q... is %d bytes, over the limit of %d: %w", instance, len(instance), maxInstance, ErrInvalidOption)
	}
	tok, err := instanceTokens.Encode(instance)
	if err != nil {
		return "", fmt.Errorf("instance name is empty: %w", ErrInvalidOption)
	}
	return prefix + "." + tok, nil
}

// maxInstance bounds an instance's name, as package partition does.
const maxInstance = 256

// decodeStrict reads data into v, refusing members v does not have and
// duplicated ones.
func decodeStrict(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, jsonv2.RejectUnknownMembers(true))
}

// readRequest reads and checks a request: a known op, within
// MaxRequestBytes.
func readRequest(data []byte) (request, error) {
	var req request
	if len(data) > MaxRequestBytes {
		return req, fmt.Errorf("the request is %d bytes, over the limit of %d", len(data), MaxRequestBytes)
	}
	if err := decodeStrict(data, &req); err != nil {
		return req, fmt.Errorf("the request is not a query: %v", err)
	}
	switch req.Op {
	case opList, opCount, opSummary, opFingerprints:
		if req.ID != "" || req.Version != 0 || req.Wait != 0 {
			return req, fmt.Errorf("a %s request has no id, version or wait_ms", req.Op)
		}
		return req, nil
	case opWait:
		return req, checkWait(req)
	}
	return req, fmt.Errorf("op %.20q is not one of %s, %s, %s, %s and %s", req.Op, opList, opCount, opSummary, opFingerprints, opWait)
}

// readReply reads and checks an instance's reply to op: an error, or the
// answer op asks for and the partitions, each a valid partition id, none
// twice.
func readReply(data []byte, op string) (reply, error) {
	var r reply
	if err := decodeStrict(data, &r); err != nil {
		return r, fmt.Errorf("the reply does not decode: %v: %w", err, ErrBadReply)
	}
	if r.Error != nil {
		if r.Page != nil || r.Count != nil || r.Summary != nil || r.Fingerprints != nil || r.Reached != nil {
			return r, fmt.Errorf("the reply holds both an error and an answer: %w", ErrBadReply)
		}
		return r, nil
	}
	answered := map[string]bool{opList: r.Page != nil, opCount: r.Count != nil, opSummary: r.Summary != nil, opFingerprints: r.Fingerprints != nil, opWait: r.Reached != nil}
	for o, has := range answered {
		if has != (o == op) {
			return r, fmt.Errorf("the reply to a %s request holds the answer of %s: %w", op, answerOf(answered), ErrBadReply)
		}
	}
	if r.Count != nil && *r.Count < 0 {
		return r, fmt.Errorf("the reply's count is %d: %w", *r.Count, ErrBadReply)
	}
	if err := checkNames(r.Partitions, r.Unplaced); err != nil {
		return r, err
	}
	return r, nil
}

// checkNames checks a reply's partitions (valid ids, none twice) and
// unplaced processors (valid names), each at most partition.MaxPartitions.
func checkNames(partitions, unplaced []string) error {
	if len(partitions) > partition.MaxPartitions || len(unplaced) > partition.MaxPartitions {
		return fmt.Errorf("the reply names %d partitions and %d unplaced processors, over the limit of %d each: %w", len(partitions), len(unplaced), partition.MaxPartitions, ErrBadReply)
	}
	for _, proc := range unplaced {
		if err := partition.CheckID(proc); err != nil || strings.Contains(proc, "/") {
			return fmt.Errorf("the reply's unplaced processors: %.40q is not a processor's name: %w", proc, ErrBadReply)
		}
	}
	seen := make(map[string]bool, len(partitions))
	for _, id := range partitions {
		if err := partition.CheckID(id); err != nil {
			return fmt.Errorf("the reply's partitions: %v: %w", err, ErrBadReply)
		}
		if seen[id] {
			return fmt.Errorf("the reply names partition %q twice: %w", id, ErrBadReply)
		}
		seen[id] = true
	}
	return nil
}

// answerOf names the answers a reply holds, for an error message.
func answerOf(answered map[string]bool) string {
	var ops []string
	for o, has := range answered {
		if has {
			ops = append(ops, o)
		}
	}
	if len(ops) == 0 {
		return "no op"
	}
	slices.Sort(ops)
	return fmt.Sprint(ops)
}

// checkWait checks a wait request: a record id, a version, a positive
// wait within MaxWait, and no query.
func checkWait(req request) error {
	switch {
	case req.Query != (api.Query{}):
		return errors.New("a wait request has no query")
	case projection.CheckID(req.ID) != nil:
		return fmt.Errorf("id: %v", projection.CheckID(req.ID))
	case req.Version == 0:
		return errors.New("version: must be at least 1")
	case req.Wait <= 0 || req.Wait > MaxWait.Milliseconds():
		return fmt.Errorf("wait_ms: %d is not between 1 and %d", req.Wait, MaxWait.Milliseconds())
	}
	return nil
}

// The encoding of a large reply. A reply over compressAbove bytes of JSON
// is sent gzipped, with encodingHeader saying so; the querier reads at
// most MaxReplyBytes of it once decompressed.
const (
	encodingHeader = "Amends-Encoding"
	gzipEncoding   = "gzip"
	compressAbove  = 64 << 10
	// MaxReplyBytes bounds an instance's reply, decompressed.
	MaxReplyBytes = 64 << 20
)

// encodeReply returns the message of out to subject: its JSON, gzipped
// when large; an answer still over limit bytes is replaced by an error
// that says so.
func encodeReply(subject string, out reply, limit int64) (*nats.Msg, error) {
	data, err := jsonv2.Marshal(out)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	if len(data) > compressAbove && len(data) <= MaxReplyBytes {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if _, err := zw.Write(data); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		msg.Data = buf.Bytes()
		msg.Header.Set(encodingHeader, gzipEncoding)
	}
	if int64(len(msg.Data)) > limit || len(data) > MaxReplyBytes {
		data, err = jsonv2.Marshal(reply{Partitions: []string{}, Error: &replyError{Kind: errTooLarge,
			Message: fmt.Sprintf("the answer is %d bytes (%d sent), over the connection's limit of %d or the reply limit of %d; ask for a smaller page or a narrower filter",
				len(data), len(msg.Data), limit, MaxReplyBytes)}})
		return &nats.Msg{Subject: subject, Data: data}, err
	}
	return msg, nil
}

// decodeBody returns a reply's JSON: its data, or its data gunzipped when
// its header says so, at most MaxReplyBytes. Another encoding, or data
// that does not decompress, is an error matching ErrBadReply.
func decodeBody(m *nats.Msg) ([]byte, error) {
	switch enc := m.Header.Get(encodingHeader); enc {
	case "":
		return m.Data, nil
	case gzipEncoding:
		zr, err := gzip.NewReader(bytes.NewReader(m.Data))
		if err != nil {
			return nil, fmt.Errorf("the reply does not decompress: %v: %w", err, ErrBadReply)
		}
		data, err := io.ReadAll(io.LimitReader(zr, MaxReplyBytes+1))
		switch {
		case err != nil:
			return nil, fmt.Errorf("the reply does not decompress: %v: %w", err, ErrBadReply)
		case len(data) > MaxReplyBytes:
			return nil, fmt.Errorf("the reply is over %d bytes decompressed: %w", MaxReplyBytes, ErrBadReply)
		}
		return data, nil
	default:
		return nil, fmt.Errorf("the reply's encoding %.20q is not %s: %w", enc, gzipEncoding, ErrBadReply)
	}
}
