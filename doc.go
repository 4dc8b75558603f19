// Package hashedwheel is a timer for very many approximate timeouts: a Go port
// of Netty's HashedWheelTimer, for servers that keep an idle, heartbeat or
// request deadline for each of hundreds of thousands of connections.
//
// Scheduling, re-arming and cancelling a timeout are O(1) and start no
// goroutine, where [time.AfterFunc] runs each callback on a goroutine of its
// own. Scheduling allocates one object, a 64-byte [Timeout] (96 bytes for a
// periodic one, and three allocations with [WithTaskExecutor]), or nothing
// when [Timer.Schedule] or [Timer.ScheduleAt] arms a Timeout of yours;
// re-arming and cancelling allocate nothing. A context from
// [Timer.WithTimeout] costs two allocations, from [Timer.WithDeadline] three.
// In exchange a task runs at the first tick at or after its deadline: never
// early, and on an idle machine at most about one tick late. Where a few
// timers must be precise, use the time package.
//
// # Jobs
//
// Make one Timer for the program with [NewTimer] and share it; [Timer.Stop] it
// when the program or subsystem is done with it.
//
//   - An idle deadline: [Timer.AfterFunc] once, then [Timeout.Reset] on each
//     message; when Reset returns false the deadline has fired. See the
//     example of Timeout.Reset.
//   - A heartbeat: [Timer.Every] runs a function every period without drift,
//     never two runs of it at once; [Timeout.Cancel] ends it. See the example
//     of Timer.Every.
//   - A request deadline: [Timer.WithTimeout] and [Timer.WithDeadline] behave
//     as [context.WithTimeout] and [context.WithDeadline], with the deadline
//     kept by the wheel. See the example of Timer.WithTimeout.
//   - A Timeout in your own struct, one per connection or request:
//     [Timer.Schedule] arms it after a delay, [Timer.ScheduleAt] at a
//     deadline, and neither allocates; its task may arm it again to look
//     later at what it watches. Re-arm first: a task that panics is
//     recovered and logged, and its Timeout stays unarmed. Keep such structs
//     by pointer, as an armed Timeout must not move, and hold a *Timeout
//     where 64 more bytes would take the struct into a larger size class.
//     See the examples of Timer.Schedule and Timer.ScheduleAt.
//
// # Who runs the tasks
//
// By default a Timer's tasks run one at a time on its worker goroutine, so a
// slow task (a write to a slow peer) delays every timeout behind it; watch
// [Timer.Stats] for late runs. [WithTaskWorkers] runs them on a pool of
// goroutines the Timer owns, so a slow task delays only itself;
// [WithTaskExecutor] hands each to a function of yours. A Timer made
// [WithoutWorker] has no goroutine: its owner, an event loop or an actor,
// runs what is due with [Timer.Advance] and sleeps until [Timer.NextDeadline].
//
// # Tick duration
//
// The timer is approximate: it does not run a task at its deadline but at the
// end of the tick that holds it. Smaller ticks are more precise and wake the
// worker more often. In most network programs I/O timeouts need not be
// precise, so the default tick is 100ms; choose the largest tick whose delay
// your deadlines can bear (10ms for most request deadlines, a tenth of the
// shortest interval), and give
// deadlines of another precision a Timer of their own. See [WithTickDuration].
//
// # Ticks per wheel (wheel size)
//
// A Timer keeps a wheel: a hash table of timeouts whose hash is the tick of
// their deadline. The default wheel has 512 buckets. Deadlines within a turn
// of the wheel (ticks per wheel times the tick) cost the least; later ones
// wait in coarser levels above it and are moved down once a level. Make a
// turn at least your usual timeout. See [WithTicksPerWheel].
//
// # Do not create many instances
//
// Each started Timer has a worker goroutine and a wheel. Create one and share
// it; creating one per connection or request defeats its purpose, and a Timer
// never stopped keeps its goroutine. More than 64 live (not stopped) Timers
// with a worker in one process log a warning.
//
// # Guarantees
//
// A task never runs before its timeout's [Timeout.Deadline]; every timeout
// ends either expired, its task run exactly once, or cancelled, its task
// never run; [Timeout.Cancel] returns true only to the call that cancelled
// it; and every method is safe for concurrent use. A Timer created inside a
// testing/synctest bubble runs on the bubble's fake clock, so tests of
// timeout logic take no real time. docs/guarantees.md states each guarantee,
// its edge cases and the tests that hold it.
//
// # Implementation
//
// The design is George Varghese and Tony Lauck's, "Hashed and Hierarchical
// Timing Wheels: Data Structures for the Efficient Implementation of a Timer
// Facility" (scheme 6, the hashed wheel, with the levels of scheme 7 for far
// deadlines), as Netty's HashedWheelTimer implements it; docs/design.md
// describes it. An idle Timer costs no CPU.
package hashedwheel
