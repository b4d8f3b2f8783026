package index

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/amends-dev/amends/api"
)

// cursor is where a page ended: the point (key, tie) of its last record in
// the query's order, and a hash of the query it belongs to. It names a
// place in the order, not a record, so records that change between pages
// do not shift the pages: a record that did not change is listed exactly
// once.
type cursor struct {
	query uint64
	key   int64
	tie   uint64
}

// queryHash identifies the filter and sort a cursor was taken with. The
// filter's Now is left out: it is when the page is taken, as the clock's
// time is for a filter without one, so each page of one listing may have
// its own (the instances a query fans out to are all given the asker's).
func queryHash(f api.Filter, s api.Sort) uint64 {
	f.Now = time.Time{}
	b, _ := json.Marshal(struct {
		F api.Filter
		S api.Sort
	}{f, s})
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// String encodes c as the opaque token List returns.
func (c cursor) String() string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[0:], c.query)
	binary.BigEndian.PutUint64(b[8:], uint64(c.key))
	binary.BigEndian.PutUint64(b[16:], c.tie)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// parseCursor decodes a token for the query with hash query. A token that
// is malformed or was taken with another filter or sort is an error
// matching ErrInvalidQuery.
func parseCursor(s string, query uint64) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 24 {
		return cursor{}, invalidQuery("cursor", "cursor %s is not a cursor a list returned (its next)", quoteCut(s))
	}
	c := cursor{query: binary.BigEndian.Uint64(b[0:]), key: int64(binary.BigEndian.Uint64(b[8:])), tie: binary.BigEndian.Uint64(b[16:])}
	if c.query != query {
		return cursor{}, invalidQuery("cursor", "cursor %s belongs to another filter or sort; start again without a cursor", quoteCut(s))
	}
	return c, nil
}

// quoteCut quotes s for a message, cut to its first 40 bytes.
func quoteCut(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", s[:40], len(s))
	}
	return fmt.Sprintf("%q", s)
}
