package hashedwheel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestResetWhileTheWorkerLinksTheTimeout re-arms timeouts right after
// scheduling them, as an idle deadline is re-armed on the first message,
// while the worker moves them into their buckets. Under -race it reports a
// data race if the worker reads a deadline that Reset may be writing without
// an atomic load.
func TestResetWhileTheWorkerLinksTheTimeout(t *testing.T) {
	tm := newTimer(t)
	reset := 0
	for range 2000 {
		to := mustSchedule(t, tm, time.Hour, func() {})
		for range 10 {
			if to.Reset(time.Hour) {
				reset++
			}
		}
		to.Cancel()
	}
	assert.Equal(t, 2000*10, reset, "Reset of a pending timeout returned false")
}
