//go:build hashedwheel_assert

package hashedwheel

// assertInvariants turns on the invariant checks of assert.go.
const assertInvariants = true
