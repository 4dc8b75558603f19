// Package hashedwheel is a timer for very many approximate timeouts: a Go port
// of Netty's HashedWheelTimer.
//
// Scheduling and cancelling a timeout are O(1) and allocate one small object.
// All tasks run on one worker goroutine per Timer, or through an executor you
// supply, instead of a goroutine per timer as with time.AfterFunc.
//
// # Tick duration
//
// The timer is approximate: it does not run a task at its deadline but at the
// first tick at or after it. A task never runs early and, on an idle machine,
// runs at most about one tick late. Smaller ticks are more precise and wake
// the worker more often. In most network programs I/O timeouts need not be
// precise, so the default tick is 100ms. Ticks under 1ms are raised to 1ms.
//
// # Ticks per wheel (wheel size)
//
// A Timer keeps a wheel: a hash table of timeouts whose hash is the tick of
// their deadline. Each tick the worker walks one bucket, including the
// timeouts in it that are due in a later turn of the wheel. The default wheel
// has 512 buckets; give it more if you schedule very many long timeouts.
//
// # Do not create many instances
//
// Each started Timer has a worker goroutine and a wheel. Create one and share
// it across your program; creating one per connection or request defeats its
// purpose. More than 64 live timers in one process logs a warning.
//
// # Implementation
//
// The design is George Varghese and Tony Lauck's, "Hashed and Hierarchical
// Timing Wheels: Data Structures for the Efficient Implementation of a Timer
// Facility" (scheme 6, the hashed wheel with unsorted lists), as Netty's
// HashedWheelTimer implements it. New timeouts go into a lock-free queue; on
// each tick the worker moves up to 100,000 of them into buckets, and runs the
// tasks of the current bucket whose deadline is before the end of the tick:
// exactly those whose remaining rounds Netty would find at zero. Comparing
// deadlines instead of counting rounds down lets the worker skip visits: it
// parks when there is nothing to do and sleeps through ticks at which nothing
// is due, so an idle Timer costs no CPU.
//
// # Jobs
//
// Beyond Netty's one-shot timeouts, Timeout.Reset re-arms an idle deadline
// without allocating, Timer.Every and Timer.NewPeriodicTimeout run heartbeats
// that do not drift, CancelledTask tells a task it was cancelled,
// WithTaskWorkers runs tasks on a pool so a slow one delays only itself,
// Timer.Stats reports what the worker did, and Timer.WithTimeout and
// Timer.WithDeadline keep request deadlines as a context.Context.
package hashedwheel
