//go:build hashedwheel_explore

package hashedwheel

import "sync/atomic"

// exploring is true: the build has the interleaving explorer of
// explore_internal_test.go, which drives, one goroutine at a time, the
// goroutines that act on a Timeout and its Timers. See explore_off.go.
const exploring = true

// exploreHook is what explorePoint calls, if set. A test installs it before
// the goroutines it explores start and clears it after they have ended; the
// hook lets any other goroutine pass through. Atomic, as goroutines the test
// does not explore (workers of other Timers, say) may call explorePoint
// meanwhile; a sync/atomic one, not the package's atomicPointer, whose
// methods call explorePoint.
var exploreHook atomic.Pointer[func(what string)]

// explorePoint marks the point just before a synchronizing operation: an
// atomic access or a mutex's Lock or Unlock, which the package's own types
// mark (atomics_on.go), or a failed attempt to take a lock ("lock-wait"), a
// wait for another goroutine ("spin"), or the start of a loop that reads
// several things before it spins ("retry load"), which the core marks by
// hand. It calls the installed hook, which may park the calling goroutine
// there and let another go on; it does nothing if no hook is installed.
func explorePoint(what string) {
	if h := exploreHook.Load(); h != nil {
		(*h)(what)
	}
}
