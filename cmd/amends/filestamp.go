package main

import (
	"io/fs"
	"log/slog"
	"os"
	"time"
)

// fileStamp is what tells a changed file: its modification time and size
// (a replaced file, or a symlink moved to another, as Kubernetes mounts
// secrets, changes them).
type fileStamp struct {
	mod  time.Time
	size int64
}

// stampOf stats path, following symlinks.
func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// warnIfShared logs a warning when a secret file (tokens, a TLS key) can
// be read by its group or by everyone.
func warnIfShared(logger *slog.Logger, what, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		logger.Warn(what+" can be read by other users than its owner; make it private (chmod 600)", "file", path, "mode", fs.FileMode(perm).String())
	}
}
