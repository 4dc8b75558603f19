//go:build !hashedwheel_assert

package hashedwheel

// assertInvariants turns off the invariant checks of assert.go; build with
// the tag hashedwheel_assert to turn them on.
const assertInvariants = false
