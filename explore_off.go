//go:build !hashedwheel_explore

package hashedwheel

// exploring reports whether the interleaving explorer is built in (the tag
// hashedwheel_explore); see explore_on.go.
const exploring = false

// explorePoint is where the interleaving explorer may switch goroutines:
// the core calls it before every access to a Timeout's state word. Without
// the tag it compiles to nothing.
func explorePoint(what string) {}
