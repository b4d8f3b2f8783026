//go:build unix

package main

import "syscall"

// raiseFileLimit raises the soft open-file limit to the hard limit where
// the system allows it, and returns the limits in force. (The Go runtime
// already does so at start on most systems; this makes it explicit and
// reports the result.)
func raiseFileLimit() fileLimits {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return fileLimits{}
	}
	lim := fileLimits{soft: uint64(r.Cur), hard: uint64(r.Max), known: true}
	if r.Cur < r.Max {
		want := r
		want.Cur = r.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			lim.soft, lim.raised = uint64(r.Max), true
		}
	}
	return lim
}
