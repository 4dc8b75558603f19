package hashedwheel

import (
	"log/slog"
	"sync/atomic"
)

// instanceCountLimit is how many live timers a process may have before
// NewTimer logs a warning (Netty's INSTANCE_COUNT_LIMIT).
const instanceCountLimit = 64

var (
	// liveTimers counts timers created and not yet stopped or collected.
	liveTimers atomic.Int64
	// tooManyTimersLogged makes the warning a once-per-process one.
	tooManyTimersLogged atomic.Bool
)

// instance is a timer's place in liveTimers. It is separate from the Timer so
// that a cleanup can release it after the Timer is collected.
type instance struct {
	released atomic.Bool
}

func newInstance(logger *slog.Logger) *instance {
	if n := liveTimers.Add(1); n > instanceCountLimit && tooManyTimersLogged.CompareAndSwap(false, true) {
		logger.Warn("hashedwheel: too many live timers; a Timer is a shared resource, "+
			"meant to be created once and reused", "live", n, "limit", instanceCountLimit)
	}
	return &instance{}
}

// release counts the timer out of liveTimers, once.
func (i *instance) release() {
	if i.released.CompareAndSwap(false, true) {
		liveTimers.Add(-1)
	}
}
