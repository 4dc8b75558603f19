//go:build hashedwheel_explore && !race

package hashedwheel

// exploreRace: see explore_race_internal_test.go.
const exploreRace = false
