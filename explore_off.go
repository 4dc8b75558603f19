//go:build !hashedwheel_explore

package hashedwheel

// exploring is false: the build has no interleaving explorer. Built with the
// tag hashedwheel_explore (see explore_on.go), it is true, and the tests
// named TestExplore drive, one goroutine at a time, the interleavings of the
// goroutines that act on one Timeout's state word.
const exploring = false

// explorePoint marks the point just before an atomic access to a Timeout's
// state word (a Load, Store, CompareAndSwap, And or Or), or a failed attempt
// to take its lock ("lock-wait") or a wait for another goroutine ("spin"),
// after which the caller retries. what names the access. Without the tag
// hashedwheel_explore it does nothing and compiles to nothing.
func explorePoint(what string) {}

// The core reads exploring only where the explorer needs a path of its own;
// keep it referenced in every build.
var _ = exploring
