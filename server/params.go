package server

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/amends-dev/amends/internal/bounds"
)

// checkParams refuses a query with a parameter not among allowed, one
// given more than once, or a value that checkText refuses: the checks of
// every list route that takes plain parameters.
func checkParams(q url.Values, allowed []string) error {
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(allowed, k) {
			return badRequest(fieldName(k, "query"), "unknown query parameter %s; the parameters are %s", quote(k), strings.Join(allowed, ", "))
		}
		if n := len(q[k]); n > 1 {
			return badRequest(k, "query parameter %s is given %d times; give it once", k, n)
		}
		if ae := checkText(k, q.Get(k), MaxParamBytes); ae != nil {
			return ae
		}
	}
	return nil
}

// cursorParam reads the query's cursor, the sequence a previous page ended
// at (0 if none).
func cursorParam(q url.Values) (uint64, error) {
	v := q.Get("cursor")
	if v == "" {
		return 0, nil
	}
	after, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest("cursor", "cursor must be the next of a previous page, a whole number, got %s", quote(v))
	}
	return after, nil
}

// limitParam reads the query's limit, from 1 to max; def if none.
func limitParam(q url.Values, def, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || !bounds.Within(n, 1, max) {
		return 0, badRequest("limit", "limit must be a whole number from 1 to %d, got %s", max, quote(v))
	}
	return n, nil
}
