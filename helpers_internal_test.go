package hashedwheel

// newTimeoutOn returns a Timeout whose timer is tm, as the internal tests
// build them by hand: not scheduled, its state the zero one.
func newTimeoutOn(tm *Timer) *Timeout {
	to := &Timeout{}
	to.timer.Store(tm)
	return to
}
