package jsonlex_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/jsonlex"
)

func TestHex4(t *testing.T) {
	for _, c := range []struct {
		in   string
		at   int
		want rune
		ok   bool
	}{
		{"00e9", 0, 0xe9, true}, {`\u00E9`, 2, 0xe9, true}, {"d83D", 0, 0xd83d, true},
		{"00g9", 0, 0, false}, {"00e", 0, 0, false}, {"x00e9", 5, 0, false}, {"00e9", -1, 0, false},
	} {
		r, ok := jsonlex.Hex4([]byte(c.in), c.at)
		assert.Equal(t, c.ok, ok, "%q at %d", c.in, c.at)
		assert.Equal(t, c.want, r, "%q at %d", c.in, c.at)
	}
}
