package hashedwheel

import "errors"

// ErrTimerStopped is returned by Start, NewTimeout, AfterFunc, Schedule,
// ScheduleAt, NewPeriodicTimeout, Every and Advance after the timer was
// stopped. See the example of [Timer.Stop].
var ErrTimerStopped = errors.New("hashedwheel: timer stopped")

// ErrTooManyPendingTimeouts is returned, wrapped with the counts, by
// NewTimeout, AfterFunc, Schedule, ScheduleAt, NewPeriodicTimeout and Every
// when the timer already holds its [WithMaxPendingTimeouts] limit. See the
// example of [WithMaxPendingTimeouts].
var ErrTooManyPendingTimeouts = errors.New("hashedwheel: too many pending timeouts")

// ErrNilTask is returned by NewTimeout, Schedule, ScheduleAt and
// NewPeriodicTimeout with a nil task and by AfterFunc and Every with a nil
// function. See the example of [Timer.NewTimeout].
var ErrNilTask = errors.New("hashedwheel: nil task")

// ErrTimeoutPending is returned, wrapped with the reason, by Schedule and
// ScheduleAt on a Timeout they cannot arm yet: one that is pending (Reset
// moves its deadline), one still in use by another Timer (its cancel not yet
// taken in, or its run not returned), or one whose task's Cancelled call is
// still owed. They change nothing then. See the example of [Timer.Schedule].
var ErrTimeoutPending = errors.New("hashedwheel: Timeout is pending")

// ErrNilTimeout is returned by Schedule and ScheduleAt with a nil *Timeout. See
// the example of [Timer.Schedule].
var ErrNilTimeout = errors.New("hashedwheel: Schedule or ScheduleAt with a nil *Timeout")

// ErrInvalidPeriod is returned, wrapped with the period, by NewPeriodicTimeout
// and Every when the period is not positive. See the example of [Timer.Every].
var ErrInvalidPeriod = errors.New("hashedwheel: invalid period")

// ErrNotCreated is returned by Start, NewTimeout, AfterFunc, Schedule,
// ScheduleAt, NewPeriodicTimeout, Every and Advance on a Timer that [NewTimer]
// did not make, such as the zero value. See the example of [NewTimer].
var ErrNotCreated = errors.New("hashedwheel: Timer not created by NewTimer; " +
	"use hashedwheel.NewTimer, not a zero Timer value")

// ErrClockMismatch is returned by Start, NewTimeout, AfterFunc, Schedule,
// ScheduleAt, NewPeriodicTimeout and Every when a Timer is used with another
// clock than the one it was created or started on: a testing/synctest
// bubble's fake clock and the real one. Create, start, use and stop a Timer
// inside the one bubble that uses it, or outside any. ScheduleAt also returns
// it for a deadline with a monotonic reading given to a Timer of a bubble.
// docs/testing.md shows a Timer on a fake clock.
var ErrClockMismatch = errors.New("hashedwheel: Timer used with another clock than it was " +
	"created or started on (a testing/synctest bubble and outside it); " +
	"create, start and use a Timer inside the one bubble that uses it")
