package hashedwheel

import "log/slog"

// instanceCountLimit is how many live timers with a worker a process may
// have before NewTimer logs a warning (Netty's INSTANCE_COUNT_LIMIT, which
// counts timers that own a thread). Timers made WithoutWorker own no
// goroutine, and are not counted.
const instanceCountLimit = 64

var (
	// liveTimers counts timers with a worker created and not yet stopped
	// or collected.
	liveTimers atomicInt64
	// tooManyTimersLogged makes the warning a once-per-process one.
	tooManyTimersLogged atomicBool
)

// instance is a timer's place in liveTimers. It is separate from the Timer so
// that a cleanup can release it after the Timer is collected.
type instance struct {
	released atomicBool
}

func newInstance(logger *slog.Logger) *instance {
	if n := liveTimers.Add(1); n > instanceCountLimit && tooManyTimersLogged.CompareAndSwap(false, true) {
		logger.Warn("hashedwheel: too many live timers; a Timer is a shared resource, "+
			"meant to be created once and reused", "live", n, "limit", instanceCountLimit)
	}
	return &instance{}
}

// release counts the timer out of liveTimers, once. A nil instance, of a
// Timer made WithoutWorker, was never counted.
func (i *instance) release() {
	if i != nil && i.released.CompareAndSwap(false, true) {
		liveTimers.Add(-1)
	}
}
