//go:build unix

package hashedwheel_test

import (
	"syscall"
	"time"
)

func init() { processCPU = rusageCPU }

// rusageCPU returns getrusage(RUSAGE_SELF) user plus system time: the CPU
// used so far by every thread of the process.
func rusageCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
