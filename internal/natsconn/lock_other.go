//go:build !unix

package natsconn

import "os"

// tryLock does not lock on systems without flock: the data directory is
// not protected from a second server there.
func tryLock(*os.File) (held bool, err error) { return false, nil }

func unlockFile(*os.File) error { return nil }
