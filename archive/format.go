package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// Record is one removed record's full history: its streams from version 1
// to the last, in order, each with its store sequence.
type Record struct {
	ID       string
	Function aggregate.FunctionInfo
	Streams  []eventstore.Stream
}

// Line is one line of an object: a stream of record Record, stored at
// sequence Seq, in the event store's JSON.
type Line struct {
	Record string          `json:"record"`
	Seq    uint64          `json:"seq"`
	Stream json.RawMessage `json:"stream"`
}

// check reports whether r is a whole history of its record, in order.
func (r *Record) check() error {
	if err := eventstore.ValidateID("record", r.ID); err != nil {
		return fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	if len(r.Streams) == 0 {
		return fmt.Errorf("record %s has no streams: %w", r.ID, ErrInvalid)
	}
	for i := range r.Streams {
		st := &r.Streams[i]
		switch {
		case st.Aggregate != aggregate.RecordAggregate(r.ID):
			return fmt.Errorf("record %s: stream %d is of %s: %w", r.ID, i, st.Aggregate, ErrInvalid)
		case st.Version != uint64(i+1):
			return fmt.Errorf("record %s: stream %d has version %d, wanted %d (a whole history from version 1): %w", r.ID, i, st.Version, i+1, ErrInvalid)
		case st.Seq == 0 || i > 0 && st.Seq <= r.Streams[i-1].Seq:
			return fmt.Errorf("record %s: version %d has sequence %d, not after the one before: %w", r.ID, st.Version, st.Seq, ErrInvalid)
		}
	}
	return nil
}

// encodeObject writes records as gzip-compressed NDJSON.
func encodeObject(records []Record) ([]byte, int, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	streams := 0
	for i := range records {
		r := &records[i]
		if err := r.check(); err != nil {
			return nil, 0, err
		}
		for j := range r.Streams {
			data, err := eventstore.Encode(&r.Streams[j])
			if err != nil {
				return nil, 0, fmt.Errorf("record %s version %d: %w", r.ID, r.Streams[j].Version, err)
			}
			if err := enc.Encode(Line{Record: r.ID, Seq: r.Streams[j].Seq, Stream: data}); err != nil {
				return nil, 0, err
			}
			streams++
		}
	}
	if err := zw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), streams, nil
}

// decodeObject reads an object back, calling fn with each record's whole
// history. It validates every line (size, JSON, the stream with the event
// store's decoder, the record it claims) and that each record's streams
// are versions 1 to n in order. A gzip stream that ends early or does not
// decompress is an error matching ErrInvalid.
func decodeObject(data []byte, fn func(Record) error) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not gzip: %v: %w", err, ErrInvalid)
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	var cur *Record
	flush := func() error {
		if cur == nil {
			return nil
		}
		if err := cur.check(); err != nil {
			return err
		}
		r := *cur
		cur = nil
		return fn(r)
	}
	seen := map[string]bool{}
	for n := 1; ; n++ {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		var l Line
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("line %d is not an archive line: %v: %w", n, err, ErrInvalid)
		}
		st, err := eventstore.Decode(l.Stream)
		if err != nil {
			return fmt.Errorf("line %d: the stream does not decode: %v: %w", n, err, ErrInvalid)
		}
		st.Seq = l.Seq
		if cur == nil || cur.ID != l.Record {
			if err := flush(); err != nil {
				return err
			}
			if seen[l.Record] {
				return fmt.Errorf("line %d: record %s appears twice: %w", n, clip(l.Record), ErrInvalid)
			}
			seen[l.Record] = true
			cur = &Record{ID: l.Record}
		}
		cur.Streams = append(cur.Streams, st)
	}
	if err := zr.Close(); err != nil {
		return fmt.Errorf("gzip: %v: %w", err, ErrInvalid)
	}
	return flush()
}

// readLine reads one line of at most MaxLineBytes, without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLineBytes {
			return nil, fmt.Errorf("over %d bytes: %w", MaxLineBytes, ErrTooLarge)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, fmt.Errorf("the last line has no newline (a cut object): %w", ErrInvalid)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("the gzip stream ends early (a cut object): %w", ErrInvalid)
		default:
			if !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%v: %w", err, ErrInvalid)
			}
			return nil, err
		}
	}
}
