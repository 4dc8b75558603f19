//go:build !race

package hashedwheel_test

const raceEnabled = false
