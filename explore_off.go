//go:build !hashedwheel_explore

package hashedwheel

// exploring is false: the build has no interleaving explorer. Built with the
// tag hashedwheel_explore (see explore_on.go), it is true, and the tests
// named TestExplore drive, one goroutine at a time, the interleavings of the
// goroutines that act on a Timeout and its Timers.
const exploring = false

// explorePoint marks the point just before a synchronizing operation (in
// the package's atomic and mutex types of atomics_on.go), or a wait the
// core marks by hand: a failed attempt to take a lock ("lock-wait"), a wait
// for another goroutine ("spin"), the start of a loop that reads several
// things before it spins ("retry load"). what names the point. Without the
// tag hashedwheel_explore it does nothing and compiles to nothing, and the
// package's atomic types are the standard ones (atomics_off.go).
func explorePoint(what string) {}

// The core reads exploring only where the explorer needs a path of its own;
// keep it referenced in every build.
var _ = exploring
