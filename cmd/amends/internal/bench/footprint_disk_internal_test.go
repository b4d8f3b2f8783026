package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stream's blocks as the server leaves them: the full ones compressed
// (they start with "cmp"), the last one as written.
func TestDiskUseIsMeasuredOverTheFullBlocks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jetstream", "$G", "streams", "S", "msgs")
	require.NoError(t, os.MkdirAll(dir, 0o750))
	write := func(name, head string, size int) {
		b := make([]byte, size)
		copy(b, head)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	write("1.blk", "cmp", 100)
	write("2.blk", "cmp", 300)
	write("10.blk", "raw", 1000) // the last: 10 sorts after 2
	write("index.db", "", 50)    // not a block

	found, err := msgsDir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(dir)))), "S")
	require.NoError(t, err)
	assert.Equal(t, dir, found)
	blocks, err := readBlocks(dir)
	require.NoError(t, err)
	require.Len(t, blocks, 3)
	assert.Equal(t, []int{1, 2, 10}, []int{blocks[0].index, blocks[1].index, blocks[2].index})

	// 5 000 raw bytes in all: 1 000 in the last block, 4 000 in the full
	// ones, which take 400 on disk: a tenth.
	u, done := useOf(blocks, 5000, true)
	assert.True(t, done)
	assert.Equal(t, diskUse{Full: 2, FullBytes: 400, FullRaw: 4000, Last: 1000}, u)
	assert.InDelta(t, 50.0, u.perRecord(500, 10), 1e-9, "a record of 500 raw bytes takes a tenth of it")

	// A full block not compressed yet: a compressed stream waits for it.
	write("3.blk", "raw", 1000)
	blocks, err = readBlocks(dir)
	require.NoError(t, err)
	_, done = useOf(blocks, 6000, true)
	assert.False(t, done, "the server has not compressed block 3 yet")
	_, done = useOf(blocks, 6000, false)
	assert.True(t, done, "an uncompressed stream has nothing to wait for")

	// No full block: the files as they are.
	one := diskUse{Last: 1000}
	assert.InDelta(t, 100.0, one.perRecord(500, 10), 1e-9)

	_, err = msgsDir(t.TempDir(), "S")
	require.Error(t, err, "a stream without blocks")
}
