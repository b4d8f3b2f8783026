package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amends-dev/amends/internal/wait"
)

// The bytes a stream takes on disk, as the server's files hold them. The
// server compresses a message block (S2) only once it is full and a new
// one is started; the last block, the one it appends to, stays as it was
// written. So the bytes per record on disk are measured over the full
// blocks: the ratio of their files to the raw bytes they hold, applied to
// the stream's raw bytes per record. Without a full block, the files are
// taken as they are.

// blockFile is one message block of a stream on disk.
type blockFile struct {
	index      int
	size       int64
	compressed bool
}

// diskUse is what a stream's blocks take on disk.
type diskUse struct {
	// Full is how many blocks are full (sealed); FullBytes their files'
	// bytes, FullRaw the raw bytes they hold.
	Full               int
	FullBytes, FullRaw int64
	// Last is the file bytes of the block the server appends to.
	Last int64
}

// perRecord is the bytes on disk per record of a stream whose raw bytes
// per record are raw: scaled by the full blocks' ratio when there are
// any, else the files' bytes over n records.
func (u diskUse) perRecord(raw float64, n int) float64 {
	if u.Full == 0 || u.FullRaw <= 0 {
		return float64(u.Last) / float64(n)
	}
	return raw * float64(u.FullBytes) / float64(u.FullRaw)
}

// streamDisk measures stream's blocks under storeDir (the server's
// JetStream store directory), whose raw bytes are stateBytes (its
// state's Bytes). With compressed, it first waits (up to a minute) until
// the server has compressed every full block: it does so in the
// background once a block is full.
func streamDisk(ctx context.Context, storeDir, stream string, stateBytes uint64, compressed bool) (diskUse, error) {
	dir, err := msgsDir(storeDir, stream)
	if err != nil {
		return diskUse{}, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		blocks, err := readBlocks(dir)
		if err != nil {
			return diskUse{}, err
		}
		u, done := useOf(blocks, stateBytes, compressed)
		if done || time.Now().After(deadline) {
			return u, nil
		}
		if err := wait.Sleep(ctx, 100*time.Millisecond); err != nil {
			return diskUse{}, err
		}
	}
}

// useOf sums blocks; done is false while a full block of a compressed
// stream is not compressed yet.
func useOf(blocks []blockFile, stateBytes uint64, compressed bool) (diskUse, bool) {
	var u diskUse
	done := true
	for i, b := range blocks {
		if i == len(blocks)-1 {
			u.Last = b.size
			continue
		}
		u.Full++
		u.FullBytes += b.size
		if compressed && !b.compressed {
			done = false
		}
	}
	u.FullRaw = int64(stateBytes) - u.Last
	return u, done
}

// msgsDir finds the directory of stream's message blocks under storeDir
// (…/streams/<stream>/msgs, whatever the account).
func msgsDir(storeDir, stream string) (string, error) {
	var found string
	err := filepath.WalkDir(storeDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || found != "" {
			return err
		}
		if d.IsDir() && d.Name() == "msgs" && filepath.Base(filepath.Dir(path)) == stream && filepath.Base(filepath.Dir(filepath.Dir(path))) == "streams" {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("find the blocks of stream %s: %w", stream, err)
	}
	if found == "" {
		return "", fmt.Errorf("stream %s has no blocks under %s", stream, storeDir)
	}
	return found, nil
}

// readBlocks lists the blocks of dir in index order, with their sizes and
// whether the server compressed them (a compressed block starts with its
// "cmp" header).
func readBlocks(dir string) ([]blockFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []blockFile
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".blk") {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSuffix(name, ".blk"))
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		head, err := readHead(filepath.Join(dir, name), 3)
		if err != nil {
			return nil, err
		}
		out = append(out, blockFile{index: i, size: info.Size(), compressed: head == "cmp"})
	}
	slices.SortFunc(out, func(a, b blockFile) int { return cmp.Compare(a.index, b.index) })
	return out, nil
}

// readHead returns the first n bytes of file (fewer if it is shorter).
func readHead(file string, n int) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", err
	}
	return string(buf[:k]), nil
}
