package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is a Sink in a directory of the local file system.
type Dir struct{ path string }

var _ Sink = (*Dir)(nil)

// OpenDir returns the sink in directory path, created (mode 0700) if
// missing. Errors match ErrInvalid for an empty path, one with a NUL, or
// one that exists and is not a directory.
func OpenDir(path string) (*Dir, error) {
	if path == "" || strings.ContainsRune(path, 0) {
		return nil, fmt.Errorf("archive directory %q is empty or holds a NUL: %w", clip(path), ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("archive directory %q: %w", clip(path), err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("archive directory %s: %w", abs, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("archive directory %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("archive directory %s is not a directory: %w", abs, ErrInvalid)
	}
	return &Dir{path: abs}, nil
}

// String returns "dir:<absolute path>".
func (d *Dir) String() string { return "dir:" + d.path }

// Put writes data to a temporary file, syncs it, renames it to name and
// syncs the directory, so that a crash leaves either the old content or
// the new, never a part.
func (d *Dir) Put(ctx context.Context, name string, data []byte) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.path, ".tmp-"+name+"-*")
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(d.path, name))
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("archive %s in %s: %w", name, d.path, werr)
	}
	return syncDir(d.path)
}

func syncDir(path string) error {
	dir, err := os.Open(path)
	if err != nil {
		return err
	}
	err = dir.Sync()
	if cerr := dir.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync archive directory %s: %w", path, err)
	}
	return nil
}

// Get reads name, at most MaxObjectBytes.
func (d *Dir) Get(ctx context.Context, name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(d.path, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("archive %s has no %s: %w", d, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", name, err)
	}
	if len(data) > MaxObjectBytes {
		return nil, fmt.Errorf("archive %s is over %d bytes: %w", name, MaxObjectBytes, ErrTooLarge)
	}
	return data, nil
}

// List returns the names of the archive's objects and manifests; other
// files (temporary ones, anything an operator put there) are left out.
func (d *Dir) List(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("list archive %s: %w", d.path, err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && ValidName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}
