//go:build race

package hashedwheel_test

// raceEnabled is true when the tests run with -race, which makes each
// operation tens of times slower.
const raceEnabled = true
