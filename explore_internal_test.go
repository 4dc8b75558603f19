//go:build hashedwheel_explore

package hashedwheel

// An interleaving explorer for a Timeout and its Timers, in the manner of
// tokio's loom and of CHESS: it runs a few operations (Cancel, Reset,
// Schedule, the owner's Advance, Stop, a run returning, the pool's
// goroutine...) each on a goroutine of its own, but one goroutine at a
// time. As loom replaces std's atomics, the library synchronizes only
// through types of its own (atomics_on.go): every atomic Load, Store, Swap,
// CompareAndSwap, Add, And or Or, and every Lock and Unlock of a mutex, of
// the Timeout's state word, the queues, the counts, the owner's token, the
// lifecycle, the worker's wake-up flags and the rest, calls explorePoint
// just before it acts (TestLibraryUsesOwnAtomics keeps it so). There the
// running goroutine parks and the explorer chooses which goroutine goes on.
// So an interleaving is a sequence of choices, one per step (what a
// goroutine does from one point to its next), and every interleaving can be
// replayed exactly. The one atomic it does not see is a cache of the real
// clock's reading (atomicClockInt64), which orders nothing and which the
// explorer could not replay.
//
// It explores in two ways: every schedule with at most a few preemptions (a
// switch away from a goroutine that could have gone on), depth first, as
// CHESS does, up to a cap of schedules; and hundreds of random schedules
// with a few preemptions at random steps (PCT: random priorities, lowered at
// random steps), each from a seed it prints. Every scenario says its bound,
// cap and number of random schedules (exploreOpts). With a point at every
// synchronizing operation a schedule takes fifty to a hundred and fifty
// steps, and the schedules within two preemptions grow with the square of
// the steps: the pairs search to bound two; the triples to bound one (two
// for those known to fail on the old core); the hand-off cases to bound two
// or three, capped at a few thousand schedules (the search goes back from
// the latest steps first); deeper preemptions are left to the random
// schedules. CI's run of them all takes three to four minutes on 2 cores.
//
// A point named "... load" only reads; "lock-wait" (a lock found held: the
// package's mutex, or a Timeout's lock) and "spin" (a wait for another
// goroutine) wait: such a goroutine is not chosen again until another
// goroutine has taken a step that may write (see exReads); if every
// goroutine left waits, that is a deadlock. A loop that reads several
// things before it spins marks its start with "retry load".
//
// Built only with the tag hashedwheel_explore:
//
//	go test -tags hashedwheel_explore -run Explore .
//
// A failure prints the schedule, step by step, and how to replay it
// (-explore.schedule), or the seed of the random schedule
// (-explore.seed, -explore.runs=1). The scenarios and their checks are in
// explore_scenarios_internal_test.go.

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	exploreSeedFlag = flag.Uint64("explore.seed", 0,
		"first seed of the random schedules (0: a fixed one); run i uses seed+i")
	exploreRunsFlag = flag.Int("explore.runs", -1,
		"random schedules per scenario (-1: the scenario's own number)")
	exploreScheduleFlag = flag.String("explore.schedule", "",
		"replay only this schedule (as a failure prints it) in the scenarios that -run selects")
	exploreBoundFlag = flag.Int("explore.bound", -1,
		"preemption bound of the exhaustive search (-1: the scenario's own)")
	exploreModeFlag = flag.String("explore.mode", "both",
		"dfs: only the exhaustive search; random: only the random schedules; both")
	exploreVerboseFlag = flag.Bool("explore.v", false, "log every schedule explored")
)

// exDefaultSeed is the first seed of the random schedules without
// -explore.seed, so that a run of the tests is the same every time.
const exDefaultSeed = 0x5eed_0f_7ee1

// exStepTimeout is how long the explorer waits for a goroutine to reach its
// next point: one that takes longer blocks on something the explorer cannot
// schedule (a channel, say: the library's atomics and mutexes are points).
const exStepTimeout = 10 * time.Second

// exWaits reports whether what, the point a goroutine parks at, says it
// cannot progress until another goroutine writes what it waits on (a lock,
// a state word, a queue).
func exWaits(what string) bool { return what == "lock-wait" || what == "spin" }

// exReads reports whether the step from point what only reads: what is a
// Load ("atomic load", or any name that ends in " load"), or a wait, which
// does nothing but go back to its loop's first point. A loop that reads more
// than one thing before it spins (several queues, say) marks its start with
// a "retry load": its spin then waits only if no other goroutine wrote since
// that start. Any other step may write (the explorer cannot see inside a
// step, so a name it does not know counts as a write; so does a mutex's
// TryLock, "mutex lock", which writes when it succeeds). A
// goroutine that waits is chosen again only after another goroutine's step
// that may write: after one that only reads, it would find what it found,
// and two waiters would take turns for ever.
func exReads(what string) bool {
	return exWaits(what) || what == "load" || strings.HasSuffix(what, " load")
}

// exThread is one explored goroutine.
type exThread struct {
	idx     int
	name    string
	resume  chan struct{}
	at      string // the point it is parked at ("start" before its first step)
	done    bool
	waiting bool // parked at a spin or lock-wait, and nobody stepped since

	// othersWrote counts the steps of other goroutines that may write;
	// mark is othersWrote as the goroutine last parked at a "retry load"
	// (marked): the start of a loop that reads more than one thing before
	// it spins. A spin waits only if nobody wrote since that start.
	othersWrote, mark int
	marked            bool
	first             int // the step at which it was first resumed, -1 before
	last              int // the step at which it returned, -1 before
	exited            chan struct{}
}

// exEvent is what a goroutine tells the explorer as it parks or returns.
type exEvent struct {
	th    *exThread
	what  string
	done  bool
	panic any
	stack []byte
}

// exRunner runs the goroutines of one schedule.
type exRunner struct {
	mu      sync.Mutex
	byID    map[uint64]*exThread
	events  chan exEvent
	threads []*exThread
	aborted chan struct{} // closed when the schedule ends with goroutines parked
}

// point is the hook: the goroutine parks if it is one the runner explores.
func (r *exRunner) point(what string) {
	id := goroutineID()
	r.mu.Lock()
	th := r.byID[id]
	r.mu.Unlock()
	if th == nil {
		return // not explored: goes through
	}
	r.park(th, what)
}

func (r *exRunner) park(th *exThread, what string) {
	select {
	case r.events <- exEvent{th: th, what: what}:
	case <-r.aborted:
		panic(errExAborted)
	}
	select {
	case <-th.resume:
	case <-r.aborted:
		panic(errExAborted) // the schedule failed: end the goroutine where it is
	}
}

// errExAborted is what a goroutine parked when its schedule failed panics
// with, to end where it is. Not runtime.Goexit: the core resumes its
// clean-up as a goroutine exits by Goexit (a Cancelled call's, see
// cleanUpOwned), and would park again, for ever.
var errExAborted = errors.New("explore: the schedule was aborted")

// abort ends the goroutines still parked, once the schedule has failed (a
// deadlock, say), so that none is left behind, and waits for them.
func (r *exRunner) abort() {
	close(r.aborted)
	for _, th := range r.threads {
		if !th.done {
			<-th.exited
		}
	}
}

// start starts body on a goroutine of its own, parked before its first step.
func (r *exRunner) start(th *exThread, body func()) {
	go func() {
		id := goroutineID()
		r.mu.Lock()
		r.byID[id] = th
		r.mu.Unlock()
		normal := false
		defer func() {
			ev := exEvent{th: th, done: true}
			if !normal {
				ev.panic = recover()
				if ev.panic == nil {
					ev.panic = "runtime.Goexit"
				}
				ev.stack = debug.Stack()
			}
			r.mu.Lock()
			delete(r.byID, id)
			r.mu.Unlock()
			close(th.exited)
			select {
			case r.events <- ev:
			case <-r.aborted:
			}
		}()
		r.park(th, "start")
		body()
		normal = true
	}()
}

// exStep is one step of a schedule: the goroutines that could go on, the
// one that ran the step before (-1 at the first), the one chosen, and the
// point it went on from.
type exStep struct {
	enabled []int
	prev    int
	chosen  int
	what    string
}

// exChooser picks the goroutine that takes step i, among st.enabled.
type exChooser func(i int, st *exStep) int

// exResult is what one schedule did.
type exResult struct {
	steps   []exStep
	threads []*exThread
	err     string // the explorer's own failure: deadlock, panic, no progress
	stuck   bool   // a goroutine reached no point: it loops, or blocks, for good
}

// runSchedule runs bodies, one goroutine each, one step at a time, as choose
// decides, for at most maxSteps steps. It returns once every body has
// returned, or at the first failure: the goroutines left then end where they
// are parked (panicking with errExAborted), unless one is stuck (res.stuck), which the
// caller reports before it ends the test binary. afterStep, if not nil, is
// called after each step with the goroutine that took it, while every
// goroutine is parked or done: it may look at what they share. A body i with
// goexitOK[i] may end by runtime.Goexit; any other panic, or a Goexit of
// another, is a failure.
func runSchedule(names []string, bodies []func(), choose exChooser, maxSteps int, afterStep func(c int), goexitOK ...bool) *exResult {
	r := &exRunner{byID: map[uint64]*exThread{}, events: make(chan exEvent), aborted: make(chan struct{})}
	res := &exResult{}
	hook := r.point
	exploreHook.Store(&hook)
	defer exploreHook.Store(nil)
	defer func() {
		// Before the hook is cleared: a deferred call of the core that the
		// aborted goroutine makes as it ends parks, and ends, again.
		if res.err != "" && !res.stuck {
			r.abort()
		}
	}()
	timer := time.NewTimer(exStepTimeout)
	defer timer.Stop()
	wait := func(th *exThread) (exEvent, bool) {
		timer.Reset(exStepTimeout)
		select {
		case ev := <-r.events:
			if ev.th != th {
				panic("explore: a goroutine that was not resumed went on")
			}
			return ev, true
		case <-timer.C:
			return exEvent{}, false
		}
	}
	for i, body := range bodies {
		th := &exThread{idx: i, name: names[i], resume: make(chan struct{}), first: -1, last: -1,
			exited: make(chan struct{})}
		r.threads = append(r.threads, th)
		r.start(th, body)
		if ev, ok := wait(th); !ok || ev.done {
			panic("explore: a goroutine did not park at its start")
		}
		th.at = "start"
	}
	res.threads = r.threads
	prev := -1
	for {
		var enabled []int
		left := 0
		for _, th := range r.threads {
			if !th.done {
				left++
				if !th.waiting {
					enabled = append(enabled, th.idx)
				}
			}
		}
		if left == 0 {
			return res
		}
		if len(enabled) == 0 {
			res.err = "deadlock: every goroutine left waits for another (" + r.describeParked() + ")"
			return res
		}
		if len(res.steps) >= maxSteps {
			res.err = fmt.Sprintf("no end after %d steps: a livelock, or goroutines that wait for "+
				"each other (%s)", maxSteps, r.describeParked())
			return res
		}
		st := exStep{enabled: enabled, prev: prev}
		c := choose(len(res.steps), &st)
		if !slices.Contains(enabled, c) {
			panic(fmt.Sprintf("explore: chose goroutine %d, not among %v", c, enabled))
		}
		th := r.threads[c]
		st.chosen, st.what = c, th.at
		res.steps = append(res.steps, st)
		if th.first < 0 {
			th.first = len(res.steps) - 1
		}
		th.resume <- struct{}{}
		ev, ok := wait(th)
		if !ok {
			res.err = fmt.Sprintf("T%d %s went on from %q and reached no point within %v: it loops "+
				"without a point, or blocks on something the explorer does not schedule", c, th.name, th.at, exStepTimeout)
			res.stuck = true
			return res
		}
		if afterStep != nil {
			afterStep(c)
		}
		if !exReads(st.what) {
			for _, o := range r.threads {
				o.waiting = false // the state may have changed: look again
				if o != th {
					o.othersWrote++
				}
			}
		}
		prev = c
		if ev.done {
			th.done, th.at, th.last = true, "", len(res.steps)-1
			if ev.panic == "runtime.Goexit" && c < len(goexitOK) && goexitOK[c] {
				continue
			}
			if ev.panic != nil {
				res.err = fmt.Sprintf("T%d %s panicked: %v\n%s", c, th.name, ev.panic, ev.stack)
				return res
			}
			continue
		}
		th.at = ev.what
		th.waiting = exWaits(ev.what)
		switch {
		case ev.what == "retry load":
			th.mark, th.marked = th.othersWrote, true
		case th.waiting && th.marked:
			// A write since the loop began may have come after what
			// the loop read: it looks again.
			th.waiting = th.othersWrote == th.mark
			th.marked = false
		}
	}
}

func (r *exRunner) describeParked() string {
	var b []string
	for _, th := range r.threads {
		if !th.done {
			b = append(b, fmt.Sprintf("T%d %s at %q", th.idx, th.name, th.at))
		}
	}
	return strings.Join(b, ", ")
}

// preempts reports whether choosing c at st is a preemption: a switch away
// from the goroutine that ran the step before while it could go on.
func (st *exStep) preempts(c int) bool {
	return st.prev >= 0 && c != st.prev && slices.Contains(st.enabled, st.prev)
}

// exDefaultChoice goes on with the goroutine that ran the step before if it
// can, else with the first that can: no preemption.
func exDefaultChoice(st *exStep) int {
	if st.prev >= 0 && slices.Contains(st.enabled, st.prev) {
		return st.prev
	}
	return st.enabled[0]
}

// exFormatSchedule returns the choices of steps as -explore.schedule takes
// them: the goroutine of each step, comma-separated, a run of k steps of
// goroutine g written gxk ("0x3,1,0x2" is 0,0,0,1,0,0).
func exFormatSchedule(steps []exStep) string {
	var b []string
	for i := 0; i < len(steps); {
		j := i
		for j < len(steps) && steps[j].chosen == steps[i].chosen {
			j++
		}
		if j-i > 1 {
			b = append(b, fmt.Sprintf("%dx%d", steps[i].chosen, j-i))
		} else {
			b = append(b, strconv.Itoa(steps[i].chosen))
		}
		i = j
	}
	return strings.Join(b, ",")
}

// exParseSchedule reads a schedule that exFormatSchedule wrote.
func exParseSchedule(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		g, k, run := strings.Cut(strings.TrimSpace(f), "x")
		n, err := strconv.Atoi(g)
		times := 1
		if err == nil && run {
			times, err = strconv.Atoi(k)
		}
		if err != nil || n < 0 || times < 1 {
			return nil, fmt.Errorf("-explore.schedule: %q is not a goroutine, or goroutine x steps", f)
		}
		for range times {
			out = append(out, n)
		}
	}
	return out, nil
}

// exReplay chooses as forced says for the steps it covers, then without
// preemption. A forced choice that cannot be made fails the schedule.
func exReplay(forced []int, bad *string) exChooser {
	return func(i int, st *exStep) int {
		if i < len(forced) {
			if slices.Contains(st.enabled, forced[i]) {
				return forced[i]
			}
			if *bad == "" {
				*bad = fmt.Sprintf("replay: at step %d goroutine %d cannot go on (those that can: %v)",
					i+1, forced[i], st.enabled)
			}
		}
		return exDefaultChoice(st)
	}
}

// exTrace writes the steps of res, one a line, with the goroutines' names.
func exTrace(res *exResult) string {
	var b strings.Builder
	for i, st := range res.steps {
		th := res.threads[st.chosen]
		mark := " "
		if st.preempts(st.chosen) {
			mark = "*" // a preemption
		}
		what := st.what
		if th.last == i {
			what += " … returns"
		}
		fmt.Fprintf(&b, "    %3d %s T%d %-28s %s\n", i+1, mark, st.chosen, th.name, what)
	}
	return b.String()
}

// exDFS enumerates the schedules with at most bound preemptions, depth
// first: it runs one, then goes back to the latest step at which another
// choice, within the bound, has not been tried, replays the steps before it
// and takes that choice, and goes on without preemption from there. run runs
// one schedule with the chooser it is given and reports whether to stop. It
// returns how many schedules it ran and whether it stopped early.
func exDFS(bound, maxRuns int, run func(choose exChooser) (stop bool, nondet string)) (runs int, stopped bool, nondet string) {
	type node struct {
		enabled  []int
		prev     int
		preempts int // preemptions before this step
		chosen   int
		tried    []int
	}
	var stack []*node
	for runs < maxRuns {
		runs++
		depth := 0
		bad := ""
		choose := func(i int, st *exStep) int {
			depth = i + 1
			if i < len(stack) {
				n := stack[i]
				if !slices.Equal(n.enabled, st.enabled) || n.prev != st.prev {
					if bad == "" {
						bad = fmt.Sprintf("step %d: could go on %v after T%d, and %v after T%d in an "+
							"earlier run of the same steps", i+1, st.enabled, st.prev, n.enabled, n.prev)
					}
					return exDefaultChoice(st)
				}
				return n.chosen
			}
			p := 0
			if i > 0 {
				q := stack[i-1]
				p = q.preempts
				if (&exStep{enabled: q.enabled, prev: q.prev}).preempts(q.chosen) {
					p++
				}
			}
			c := exDefaultChoice(st)
			stack = append(stack, &node{enabled: st.enabled, prev: st.prev, preempts: p, chosen: c, tried: []int{c}})
			return c
		}
		stop, n := run(choose)
		if n != "" {
			bad = n
		}
		if bad != "" {
			return runs, true, bad
		}
		if stop {
			return runs, true, ""
		}
		stack = stack[:min(depth, len(stack))]
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			st := &exStep{enabled: n.enabled, prev: n.prev}
			next := -1
			for _, c := range n.enabled {
				if slices.Contains(n.tried, c) {
					continue
				}
				if st.preempts(c) && n.preempts >= bound {
					continue
				}
				next = c
				break
			}
			if next >= 0 {
				n.chosen = next
				n.tried = append(n.tried, next)
				break
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return runs, false, ""
		}
	}
	return runs, false, ""
}

// exPCT returns a chooser for one random schedule with at most depth
// preemptions, after PCT (Burckhardt et al., 2010): each goroutine has a
// random priority and the highest that can go on does; at depth random steps
// among the first length, the goroutine about to go on drops below every
// other.
func exPCT(rng *rand.Rand, threads, depth, length int) exChooser {
	prio := make([]int, threads)
	for i, p := range rng.Perm(threads) {
		prio[i] = depth + 1 + p
	}
	change := map[int]int{}
	for j := range depth {
		change[rng.IntN(max(length, 1))] = depth - j
	}
	return func(i int, st *exStep) int {
		best := exPCTBest(prio, st.enabled)
		if low, ok := change[i]; ok && len(st.enabled) > 1 {
			prio[best] = low
			best = exPCTBest(prio, st.enabled)
		}
		return best
	}
}

// exPCTBest returns the goroutine of highest priority among enabled.
func exPCTBest(prio []int, enabled []int) int {
	best := enabled[0]
	for _, c := range enabled {
		if prio[c] > prio[best] {
			best = c
		}
	}
	return best
}

// exploreOpts says how hard to explore a scenario.
type exploreOpts struct {
	bound    int // preemption bound of the exhaustive search; < 0: none
	maxRuns  int // cap on the schedules of the exhaustive search
	random   int // random schedules
	maxDepth int // at most this many preemptions in a random schedule
	maxSteps int // steps of one schedule
}

func (o exploreOpts) withDefaults() exploreOpts {
	if o.maxRuns == 0 {
		o.maxRuns = 50_000
	}
	if o.maxDepth == 0 {
		o.maxDepth = 3
	}
	if o.maxSteps == 0 {
		o.maxSteps = 2_000
	}
	if *exploreBoundFlag >= 0 {
		o.bound = *exploreBoundFlag
	}
	if *exploreRunsFlag >= 0 {
		o.random = *exploreRunsFlag
	} else if exploreRace {
		o.random /= 4 // each step is many times slower
	}
	switch *exploreModeFlag {
	case "dfs":
		o.random = 0
	case "random":
		o.bound = -1
	}
	return o
}
