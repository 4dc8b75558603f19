//go:build hashedwheel_explore && race

package hashedwheel

// exploreRace: with -race each step of a schedule is many times slower, so
// the explorer runs fewer random schedules.
const exploreRace = true
