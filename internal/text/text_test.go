package text_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/text"
)

func TestAtNamesTheCharacterNotItsFirstByte(t *testing.T) {
	assert.Equal(t, `'ë' (bytes c3 ab)`, text.At("r-ë", 2))
	assert.Equal(t, `' '`, text.At("a b", 1))
	assert.Equal(t, `the byte 0xff (not UTF-8)`, text.At("a\xffb", 1))
	assert.Equal(t, `the byte 0xc3 (not UTF-8)`, text.At("a\xc3", 1), "a sequence cut short")
	assert.Equal(t, `'\u202e' (bytes e2 80 ae)`, text.At("a\u202eb", 1), "a bidi control shown escaped")
}
