//go:build unix

package index

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used;
// on a loaded machine it is what a benchmark costs, where the wall time
// also counts the other processes.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
