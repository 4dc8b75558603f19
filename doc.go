// Package hashedwheel is a timer for very many approximate timeouts: a Go port
// of Netty's HashedWheelTimer, for servers that keep an idle, heartbeat or
// request deadline for each of hundreds of thousands of connections.
//
// Scheduling, re-arming and cancelling a timeout are O(1) and start no
// goroutine: the tasks run on one worker goroutine per [Timer] (or on a pool
// it owns, or through an executor you supply), instead of a goroutine per
// timer as with [time.AfterFunc]. Scheduling allocates one object, a 64-byte
// [Timeout] (96 bytes for a periodic one, and three allocations with
// [WithTaskExecutor]), or nothing when [Timer.Schedule] or
// [Timer.ScheduleAt] arms a Timeout of yours; re-arming and cancelling allocate nothing. A context
// from [Timer.WithTimeout] costs two allocations, from [Timer.WithDeadline]
// three. In exchange a task runs at the first tick at or after its deadline:
// never early, and on an idle machine at most about one tick late.
//
// # Jobs
//
// Make one Timer for the program with [NewTimer] and share it; [Timer.Stop] it
// when the program or subsystem is done with it.
//
//   - An idle deadline: [Timer.AfterFunc] once, then [Timeout.Reset] on each
//     message, which allocates nothing; when Reset returns false the deadline
//     has fired. See the example of Timeout.Reset.
//   - A heartbeat: [Timer.Every] runs a function every period without drift,
//     never two runs of it at once; [Timeout.Cancel] ends it. Run tasks that
//     may block (a write to a slow peer) on a pool with [WithTaskWorkers]. See
//     the example of Timer.Every.
//   - A request deadline: [Timer.WithTimeout] and [Timer.WithDeadline] behave
//     as [context.WithTimeout] and [context.WithDeadline], with the deadline
//     kept by the wheel. See the example of Timer.WithTimeout.
//   - An event loop or an actor that runs its own timeouts: a Timer made
//     [WithoutWorker] starts no goroutine; the loop calls [Timer.Advance] to
//     run what is due on its own goroutine, and sleeps until
//     [Timer.NextDeadline]. See the example of Timer.Advance.
//   - A Timeout in your own struct, one per connection or request:
//     [Timer.Schedule] arms it after a delay, [Timer.ScheduleAt] at a
//     deadline, and neither allocates; its task may arm it again to look
//     later at what it watches. A period re-armed with ScheduleAt at its
//     last deadline plus the period keeps it; with Schedule, which counts
//     from the run, it drifts a tick a period. Re-arm first: a task that
//     panics is recovered and logged, and its Timeout stays unarmed. Keep
//     such structs by pointer: append moves the elements of a slice, armed
//     Timeouts included. A Timeout adds 64 bytes to the struct; where that
//     takes it into the allocator's next size class, hold it by pointer
//     (new(Timeout), made with the struct). See the examples of
//     Timer.Schedule and Timer.ScheduleAt, and the package's examples.
//
// A task runs on the worker by default, so a slow task delays every timeout
// behind it: give such tasks [WithTaskWorkers], and watch [Timer.Stats].
//
// # Tick duration
//
// The timer is approximate: it does not run a task at its deadline but at the
// end of the tick that holds it. Smaller ticks are more precise and wake the
// worker more often. In most network programs I/O timeouts need not be
// precise, so the default tick is 100ms; choose the largest tick whose delay
// your deadlines can bear (10ms for most request deadlines, a tenth of the
// shortest interval). An interval shorter than the tick runs once a tick.
// Ticks under 1ms are raised to 1ms. See [WithTickDuration].
//
// # Ticks per wheel (wheel size)
//
// A Timer keeps a wheel: a hash table of timeouts whose hash is the tick of
// their deadline. A timeout due more than a turn of the wheel (ticks per
// wheel times the tick) ahead waits in a coarser level above it, 64 times
// coarser each, where nothing looks at it until its slot comes up; it is
// then taken down a level, so it is looked at once per level (four times
// for an hour at a 1ms tick) and never by the walks of the wheel's buckets.
// A tick at which something is due walks one bucket. The default wheel has
// 512 buckets; deadlines within a turn cost the least, so make ticks per
// wheel times the tick at least your usual short timeout. See
// [WithTicksPerWheel].
//
// # Do not create many instances
//
// Each started Timer has a worker goroutine and a wheel. Create one and share
// it across your program; creating one per connection or request defeats its
// purpose, and a Timer never stopped keeps its goroutine, silently: call
// [Timer.Stop] when done. More than 64 live (started or not, not stopped)
// Timers with a worker in one process log a warning; Timers made
// [WithoutWorker] have no goroutine to keep, and are not counted.
//
// # Guarantees
//
// A task never runs before its timeout's [Timeout.Deadline]; every timeout
// ends either expired, its task run exactly once, or cancelled, its task
// never run; [Timeout.Cancel] returns true only to the call that cancelled
// it; and every method is safe for concurrent use. A Timer created inside a
// [testing/synctest] bubble runs on the bubble's fake clock, so tests of
// timeout logic take no real time.
//
// # Implementation
//
// The design is George Varghese and Tony Lauck's, "Hashed and Hierarchical
// Timing Wheels: Data Structures for the Efficient Implementation of a Timer
// Facility" (scheme 6, the hashed wheel with unsorted lists), as Netty's
// HashedWheelTimer implements it. New timeouts go into lock-free queues; on
// each tick the worker moves up to 100,000 of them into buckets, and runs the
// tasks of the current bucket whose deadline is before the end of the tick:
// exactly those whose remaining rounds Netty would find at zero. Comparing
// deadlines instead of counting rounds down lets the worker skip visits: it
// parks when there is nothing to do and sleeps through ticks at which nothing
// is due, so an idle Timer costs no CPU. Deadlines beyond a turn of the wheel
// wait in levels above it, as in the paper's hierarchical scheme 7, and move
// down once a level. Each Timeout's state changes only under its own lock,
// as the runtime guards a time.Timer.
package hashedwheel
