package natsconn

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// LockFileName is the file in the data directory that an Embedded holds an
// exclusive lock on while it runs. It contains the pid of the holder.
const LockFileName = "amends.lock"

// dirLock is an exclusive lock on a data directory.
type dirLock struct {
	f *os.File
}

// lockDataDir takes the exclusive lock of dir (which exists) and writes
// this process's pid into the lock file. The lock is released by unlock,
// or by the kernel when the process ends, even by kill -9. It returns an
// error matching ErrDataDirLocked, naming the directory and the holder's
// pid, if another process or another Embedded of this one holds it.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFileName)
	// No O_TRUNC: truncating before holding the lock would erase the
	// holder's pid.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, invalidConfig("data directory %s: lock file %s: %w: choose a directory this process can write", dir, path, pathErr(err))
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s: lock %s: %w", dir, path, err)
	}
	if held {
		holder := "another process"
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && pid > 0 {
				holder = "process " + strconv.Itoa(pid)
				if pid == os.Getpid() {
					holder += " (this one)"
				}
			}
		}
		f.Close()
		return nil, &markedError{
			msg: fmt.Sprintf("data directory %s is in use by %s, which holds the lock %s: two servers must never share one JetStream store; stop that process or choose another data directory",
				dir, holder, path),
			mark: ErrDataDirLocked,
		}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// unlock empties the lock file and releases the lock. The file stays, so
// that a process waiting on the same inode never races a new file.
func (l *dirLock) unlock() {
	if l == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unlockFile(l.f)
	_ = l.f.Close()
}
