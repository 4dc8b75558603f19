//go:build hashedwheel_explore

package hashedwheel

import "sync/atomic"

// exploring is true: the build has the interleaving explorer of
// explore_internal_test.go, which drives, one goroutine at a time, the
// goroutines that act on one Timeout's state word. See explore_off.go.
const exploring = true

// exploreHook is what explorePoint calls, if set. A test installs it before
// the goroutines it explores start and clears it after they have ended; the
// hook lets any other goroutine pass through. Atomic, as goroutines the test
// does not explore (workers of other Timers, say) may call explorePoint
// meanwhile.
var exploreHook atomic.Pointer[func(what string)]

// explorePoint marks the point just before an atomic access to a Timeout's
// state word (a Load, Store, CompareAndSwap, And or Or), or a failed attempt
// to take its lock ("lock-wait") or a wait for another goroutine ("spin"),
// after which the caller retries. It calls the installed hook, which may park
// the calling goroutine there and let another go on; it does nothing if no
// hook is installed.
func explorePoint(what string) {
	if h := exploreHook.Load(); h != nil {
		(*h)(what)
	}
}
