package hashedwheel

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults and limits, as in Netty.
const (
	defaultTickDuration  = 100 * time.Millisecond
	defaultTicksPerWheel = 512

	// minTickDuration is the shortest tick. Shorter ones are raised to it:
	// a worker that wakes more often than every millisecond spends its time
	// waking (Netty #8277).
	minTickDuration = time.Millisecond

	// maxTicksPerWheel is the largest wheel: 2^30 buckets, the largest power
	// of two an int32 bucket index holds.
	maxTicksPerWheel = 1 << 30
)

// Option configures a Timer. Options are made by the With functions and
// applied, in order, by [NewTimer]. See the example of [NewTimer].
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// config is what the options build. NewTimer validates the whole and copies it
// into the Timer.
type config struct {
	tickDuration       time.Duration
	ticksPerWheel      int
	maxPendingTimeouts int64
	taskExecutor       func(task func())
	taskWorkers        int
	withoutWorker      bool
	logger             *slog.Logger
}

// WithTickDuration sets the interval between ticks; the default is 100ms. A
// task runs at the first tick at or after its deadline, so the tick is the
// timer's precision: at the default tick, a 50ms timeout runs 50 to 150ms after
// it was armed, and an interval shorter than the tick runs once a tick at most.
// Choose a tick of a tenth of the shortest interval or deadline the Timer holds,
// and give deadlines of another precision a Timer of their own.
//
// d must be positive. Durations under 1ms are raised to 1ms with a warning, as
// Netty does. [NewTimer] fails if d times the wheel length overflows an int64
// count of nanoseconds. See the package's example TickForConfiguredIntervals.
func WithTickDuration(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("hashedwheel: WithTickDuration(%v): tick duration must be > 0", d)
		}
		c.tickDuration = d
		return nil
	})
}

// WithTicksPerWheel sets the number of buckets in the wheel; the default is
// 512. n must be in [1, 1<<30] and is rounded up to a power of two. Timeouts
// due within a turn of the wheel (n times the tick) go straight to their
// bucket; later ones wait in levels above it, each 64 times coarser, and are
// moved down once a level. NewTimer allocates the wheel up front, 24 bytes a
// bucket (12 KiB by default, 24 GiB for 1<<30); each level above it costs
// 1.5 KiB, made when a timeout first goes there. See the example of NewTimer.
func WithTicksPerWheel(n int) Option {
	return optionFunc(func(c *config) error {
		if n <= 0 || n > maxTicksPerWheel {
			return fmt.Errorf("hashedwheel: WithTicksPerWheel(%d): ticks per wheel must be in [1, %d]",
				n, maxTicksPerWheel)
		}
		c.ticksPerWheel = n
		return nil
	})
}

// WithMaxPendingTimeouts limits how many timeouts may be pending at once; the
// calls that schedule fail with an error wrapping [ErrTooManyPendingTimeouts]
// while the limit is reached. n <= 0, the default, means no limit. See the
// example of WithMaxPendingTimeouts.
func WithMaxPendingTimeouts(n int64) Option {
	return optionFunc(func(c *config) error {
		c.maxPendingTimeouts = max(n, 0)
		return nil
	})
}

// WithTaskExecutor makes the worker hand each due task to exec instead of
// running it itself; by default tasks run one at a time on the worker
// goroutine, so a slow task delays every later one. exec must not be nil. It is
// called on the worker goroutine and should return quickly, for example after
// passing task to goroutines of its own. Most programs want [WithTaskWorkers],
// a pool the Timer owns and [Timer.Stop] waits for, instead.
//
// exec must call each task it is given exactly once, now or later; a call
// after the first runs nothing more. A task exec never calls is lost, and
// the Timer cannot tell: the task never runs, and a one-shot Timeout can no
// longer be armed again; a periodic one gets no later run until Cancel or
// Stop, and Stop ends it. Handing a one-shot run to exec allocates two small
// objects; periodic runs allocate nothing. If exec panics or
// calls runtime.Goexit, before or after calling task, it is logged and the
// Timeout ends as if the run had returned: a one-shot one may be scheduled
// again at once, and a periodic one goes on with its next period.
//
// Stop does not wait for tasks running on exec's goroutines. If exec waits for
// a task that runs on another goroutine, that task must not call Stop, which
// would wait for the worker, which waits for exec.
//
// It cannot be combined with WithTaskWorkers or [WithoutWorker]: NewTimer
// returns an error naming both options. See guarantees 2 and 6 in
// docs/guarantees.md, and the example of WithTaskWorkers.
func WithTaskExecutor(exec func(task func())) Option {
	return optionFunc(func(c *config) error {
		if exec == nil {
			return errors.New("hashedwheel: WithTaskExecutor(nil): executor must not be nil")
		}
		c.taskExecutor = exec
		return nil
	})
}

// WithTaskWorkers runs tasks on a pool of n goroutines that the Timer starts
// with its worker and ends in Stop, which waits for the tasks running on them.
// A slow task (a blocked write, say) then delays only its own pool goroutine,
// not expiry, nor the other tasks while another pool goroutine is free: give n
// more goroutines than tasks that may block at once. Tasks start in the order
// they come due, through an unbounded queue, so the worker never waits for the
// pool; [CancelledTask]'s Cancelled still runs on the worker. Stop called from
// a pooled task neither deadlocks nor waits. n must be positive, and the option
// cannot be combined with [WithTaskExecutor] or [WithoutWorker]. See guarantee
// 14 in docs/guarantees.md, and the example of WithTaskWorkers.
func WithTaskWorkers(n int) Option {
	return optionFunc(func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("hashedwheel: WithTaskWorkers(%d): the number of task workers must be > 0", n)
		}
		c.taskWorkers = n
		return nil
	})
}

// WithoutWorker makes a Timer that its owner drives, for an event loop or an
// actor that wants its timeouts to run on its own goroutine, between two
// polls: the Timer starts no goroutine, Start does nothing, and the owner
// calls [Timer.Advance] to run what is due and [Timer.NextDeadline] to learn
// how long it may sleep. Any goroutine may still schedule, reset, cancel and
// stop. The owner runs its own tasks: combined with [WithTaskWorkers] or
// [WithTaskExecutor], NewTimer returns an error naming both options; a task
// that must not hold up the loop hands its work off itself, to a goroutine or
// a channel of its own. See the example of Timer.Advance.
func WithoutWorker() Option {
	return optionFunc(func(c *config) error {
		c.withoutWorker = true
		return nil
	})
}

// WithLogger sets the logger for warnings (a raised tick duration, too many
// live timers) and for panics recovered from tasks. The default is
// slog.Default() as [NewTimer] finds it. l must not be nil; to discard the
// output, pass slog.New(slog.DiscardHandler). The examples keep the default;
// see the example of [NewTimer].
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			return errors.New("hashedwheel: WithLogger(nil): logger must not be nil")
		}
		c.logger = l
		return nil
	})
}

// newConfig applies opts to the defaults, validates the result and rounds it
// to what the Timer will use.
func newConfig(opts []Option) (config, error) {
	c := config{
		tickDuration:  defaultTickDuration,
		ticksPerWheel: defaultTicksPerWheel,
	}
	for i, opt := range opts {
		if opt == nil {
			return config{}, fmt.Errorf("hashedwheel: option %d is nil", i)
		}
		if err := opt.apply(&c); err != nil {
			return config{}, err
		}
	}
	if c.taskWorkers > 0 && c.taskExecutor != nil {
		return config{}, fmt.Errorf("hashedwheel: WithTaskWorkers(%d) and WithTaskExecutor both given: "+
			"tasks run either on the pool or through the executor", c.taskWorkers)
	}
	if c.taskWorkers > 0 && c.withoutWorker {
		return config{}, fmt.Errorf("hashedwheel: WithTaskWorkers(%d) and WithoutWorker both given: "+
			"a Timer without a worker runs its tasks in Advance, on its owner's goroutine", c.taskWorkers)
	}
	if c.taskExecutor != nil && c.withoutWorker {
		return config{}, errors.New("hashedwheel: WithTaskExecutor and WithoutWorker both given: " +
			"a Timer without a worker runs its tasks in Advance, on its owner's goroutine; " +
			"a task that must not hold up the owner hands its work off itself")
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	c.ticksPerWheel = nextPowerOfTwo(c.ticksPerWheel)
	// Netty also rejects the limit itself; the contract rejects only
	// overflow.
	if limit := math.MaxInt64 / int64(c.ticksPerWheel); int64(c.tickDuration) > limit {
		return config{}, fmt.Errorf("hashedwheel: WithTickDuration(%v): with %d ticks per wheel it must be at most %v",
			c.tickDuration, c.ticksPerWheel, time.Duration(limit))
	}
	if c.tickDuration < minTickDuration {
		c.logger.Warn("hashedwheel: tick duration under the minimum; using the minimum",
			"configured", c.tickDuration, "minimum", minTickDuration)
		c.tickDuration = minTickDuration
	}
	return c, nil
}

// nextPowerOfTwo returns the smallest power of two >= n, for 1 <= n <= 1<<30.
func nextPowerOfTwo(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
