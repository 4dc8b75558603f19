package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// Sessions: N in-memory sessions, as a chat, game or MQTT broker keeps them,
// each with a heartbeat every period and an idle deadline that activity
// re-arms. One session in SilentEvery is silent: nothing re-arms it, and
// its idle deadline ends it. One process per variant and count:
//
//  1. the sessions are made over one period (so their heartbeats spread);
//  2. a goroutine of its own re-arms every active session once per
//     activity interval, in slices due every 10ms (a late wake does the
//     slices it missed), through the warm-up;
//  3. live memory per session is read after a full GC;
//  4. phase A, one window: heartbeats only (the activity goroutine pauses);
//  5. phase B, one window: heartbeats and activity;
//  6. the process waits until every silent session has expired.
//
// CPU per heartbeat is phase A's CPU over its heartbeats. CPU per re-arm is
// measured twice: on the activity goroutine's own thread (the calls
// themselves), and as phase B's CPU beyond phase A's over the re-arms (what
// the re-arms cost the whole process, deferred work included).

func sessionsScenario(p params) *scenario {
	return &scenario{
		Name:  "sessions",
		Title: "Sessions: heartbeats and idle deadlines in memory",
		Variants: []variant{
			{ID: "wheel", Label: "hashedwheel", API: "Timer.Every + Timer.AfterFunc, Timeout.Reset"},
			{ID: "wheel-schedule", Label: "hashedwheel, ScheduleAt", API: "one Timeout in each session, armed with Timer.ScheduleAt; its task, the session, ends the session if idle, beats if due and arms its Timeout again at the next of its heartbeat and its idle deadline, reading no clock; activity stores its time in the session"},
			{ID: "afterfunc", Label: "time.AfterFunc", API: "time.AfterFunc re-armed in its callback + time.AfterFunc, Timer.Reset", Base: true},
			{ID: "goroutine", Label: "goroutine+Ticker", API: "a goroutine per session: time.Ticker + time.Timer in a select, Timer.Reset"},
		},
		Cases: p.Sessions,
		run:   runSessions,
	}
}

// sessionsSpec is the -spec of a sessions process.
type sessionsSpec struct {
	Variant     string        `json:"variant"`
	N           int           `json:"n"`
	Period      time.Duration `json:"period"`
	Activity    time.Duration `json:"activity"`
	IdleLimit   time.Duration `json:"idle_limit"`
	SilentEvery int           `json:"silent_every"`
	Warmup      time.Duration `json:"warmup"`
	Window      time.Duration `json:"window"`
	Tick        time.Duration `json:"tick"`
}

// othersBusy is how many cores other programs may keep busy, on average
// over a measured phase, before an overloaded run counts as disturbed: the
// machine, not the variant, fell behind, and the run is made again.
const othersBusy = 0.5

// sessionsAttempts is how many times runSessions makes a run that other
// programs disturbed.
const sessionsAttempts = 3

func runSessions(p params, v variant, n int) (outcome, error) {
	spec := sessionsSpec{
		Variant: v.ID, N: n, Period: p.Period, Activity: p.Activity, IdleLimit: p.IdleLimit,
		SilentEvery: p.SilentSessions, Warmup: p.SessWarmup, Window: p.SessWindow, Tick: p.Tick,
	}
	// A run is overloaded when the variant could not keep up. On a machine
	// shared with other programs (a compiler, another benchmark) it can
	// fall behind because they took the cores: such a run is made again,
	// up to sessionsAttempts times in all, and the last one counts.
	for attempt := 1; ; attempt++ {
		o, err := runSessionsOnce(spec)
		if err != nil {
			return o, err
		}
		o.Metrics["attempts"] = float64(attempt)
		others := max(o.Metrics["others_cores_a"], o.Metrics["others_cores_b"])
		// A failed hard check is never made again: it stands.
		if o.Metrics["overloaded"] == 0 || others <= othersBusy || len(o.Violations) > 0 || attempt == sessionsAttempts {
			return o, nil
		}
		fmt.Fprintf(os.Stderr, "sessions %s %s: overloaded while other programs kept %.1f cores busy; run again\n",
			count(n), v.Label, others)
	}
}

func runSessionsOnce(spec sessionsSpec) (outcome, error) {
	c, err := startChild("sessions", spec)
	if err != nil {
		return outcome{}, err
	}
	// Making a million sessions takes seconds, and a minute when the
	// variant cannot keep up; the silent ones expire an idle limit after
	// they were made.
	timeout := 3*time.Minute + spec.Period + spec.Warmup + 2*spec.Window + spec.IdleLimit
	var o outcome
	l, err := c.expect(timeout)
	if err == nil {
		err = decodeSpec([]byte(l), &o)
	}
	if err != nil {
		c.kill()
		return outcome{}, err
	}
	return o, c.finish(10 * time.Second)
}

// sr is the sessions process's run; a process runs one.
var sr *sessionsRun

type sessionsRun struct {
	sessionsSpec
	base        time.Time
	sampleEvery int // one session in this many records its heartbeat intervals
	samples     []*periodSamples
	recording   atomic.Bool
	// silentCreated[i] is when silent session i*SilentEvery+SilentEvery-1
	// was armed, in ns since base: written before its idle deadline is
	// armed, read when it expires.
	silentCreated []int64

	mu            sync.Mutex
	late          []float64 // ms: idle expiries of silent sessions after their deadline
	early         atomic.Int64
	activeExpired atomic.Int64
	expired       atomic.Int64
}

func (r *sessionsRun) now() int64 { return int64(time.Since(r.base)) }

func (r *sessionsRun) silent(id int) bool { return id%r.SilentEvery == r.SilentEvery-1 }

// periodSamples are the heartbeat intervals of one sampled session.
type periodSamples struct {
	mu        sync.Mutex
	last      int64
	intervals []float64 // ms
}

// sessionCore is what every variant's session holds besides its timers.
type sessionCore struct {
	id     int32
	closed atomic.Bool   // set when the idle deadline ends the session
	beats  atomic.Uint32 // heartbeats run
}

// heartbeat is a session's periodic work: it counts itself, and sampled
// sessions record the interval since their last heartbeat.
func (s *sessionCore) heartbeat() {
	s.beats.Add(1)
	if int(s.id)%sr.sampleEvery != 0 {
		return
	}
	ps := sr.samples[int(s.id)/sr.sampleEvery]
	now := sr.now()
	ps.mu.Lock()
	if ps.last != 0 && sr.recording.Load() {
		ps.intervals = append(ps.intervals, measure.Millis(time.Duration(now-ps.last)))
	}
	ps.last = now
	ps.mu.Unlock()
}

// expired ends the session: it records how late a silent session's idle
// deadline ran, and counts active sessions that expired (none should).
func (s *sessionCore) expired() {
	if s.closed.Swap(true) {
		return // a time.Timer re-armed after it had fired: ended already
	}
	now := sr.now()
	id := int(s.id)
	if sr.silent(id) {
		late := now - (sr.silentCreated[id/sr.SilentEvery] + int64(sr.IdleLimit))
		if late < 0 {
			sr.early.Add(1)
		}
		sr.mu.Lock()
		sr.late = append(sr.late, measure.Millis(time.Duration(late)))
		sr.mu.Unlock()
	} else {
		sr.activeExpired.Add(1)
	}
	sr.expired.Add(1)
}

// armed notes when a session's idle deadline was first armed.
func (s *sessionCore) armed() {
	if id := int(s.id); sr.silent(id) {
		sr.silentCreated[id/sr.SilentEvery] = sr.now()
	}
}

// sessionSet is one variant's sessions.
type sessionSet interface {
	create(i int) error
	rearm(i int)
	beats() int64
}

// wheelSessions: Timer.Every for the heartbeat, Timer.AfterFunc for the idle
// deadline and Timeout.Reset on activity; one Timer for all.
type wheelSessions struct {
	t *hashedwheel.Timer
	s []*wheelSession
}

type wheelSession struct {
	sessionCore
	hb, idle *hashedwheel.Timeout
}

func (w *wheelSessions) create(i int) error {
	s := &wheelSession{sessionCore: sessionCore{id: int32(i)}}
	var err error
	if s.hb, err = w.t.Every(sr.Period, s.heartbeat); err != nil {
		return err
	}
	s.armed()
	if s.idle, err = w.t.AfterFunc(sr.IdleLimit, s.expire); err != nil {
		return err
	}
	w.s[i] = s
	return nil
}

func (s *wheelSession) expire() {
	s.expired()
	s.hb.Cancel()
}

func (w *wheelSessions) rearm(i int) {
	if s := w.s[i]; !s.closed.Load() {
		s.idle.Reset(sr.IdleLimit)
	}
}

func (w *wheelSessions) beats() (n int64) {
	for _, s := range w.s {
		n += int64(s.beats.Load())
	}
	return n
}

// scheduleSessions: one hashedwheel.Timeout in each session, armed with
// Timer.ScheduleAt, whose task, the session, does both jobs: it ends the
// session if it has seen no activity for the idle limit, beats if its
// heartbeat is due (every period from when it was made), and arms its own
// Timeout again at the earlier of the next heartbeat and the idle deadline.
// It reads no clock: it judges by the deadline it ran for, which has passed
// when it runs, and ScheduleAt takes a deadline with a monotonic reading as
// it is. Unlike Timer.Every it does not skip heartbeats that fall more than
// a period behind (it would need the clock to know): a run that late arms
// the next beat at a deadline that has passed, which runs at the next tick,
// until the beats catch up. Activity only stores its time in the session,
// as the heap variant of the event loop does; one Timer for all.
type scheduleSessions struct {
	t *hashedwheel.Timer
	s []*scheduleSession
}

type scheduleSession struct {
	sessionCore
	// lastActive is when activity last came, in ns since sr.base: stored by
	// the activity goroutine, read by the task.
	lastActive atomic.Int64
	nextBeat   int64 // when the next heartbeat is due, ns since sr.base; the task only
	to         hashedwheel.Timeout
}

func (w *scheduleSessions) create(i int) error {
	s := &scheduleSession{sessionCore: sessionCore{id: int32(i)}}
	s.armed()
	now := sr.now() // after armed: the idle deadline is never before the one the check expects
	s.lastActive.Store(now)
	s.nextBeat = now + int64(sr.Period)
	w.s[i] = s
	// The heartbeat comes before the idle deadline.
	return w.t.ScheduleAt(&s.to, s, sr.base.Add(time.Duration(s.nextBeat)))
}

// Run is the session's look at its deadlines, at or after due, the one its
// Timeout was armed for. Its Timeout has expired once its run is handed
// out, so ScheduleAt arms it again from here; it fails only once the Timer
// is stopped.
func (s *scheduleSession) Run(to *hashedwheel.Timeout) {
	due := int64(to.Deadline().Sub(sr.base)) // two monotonic readings: no clock read
	idle := s.lastActive.Load() + int64(sr.IdleLimit)
	if due >= idle { // idle since before due, which has passed
		s.expired()
		return
	}
	if due >= s.nextBeat {
		s.heartbeat()
		s.nextBeat += int64(sr.Period)
	}
	_ = to.Timer().ScheduleAt(to, s, sr.base.Add(time.Duration(min(s.nextBeat, idle))))
}

func (w *scheduleSessions) rearm(i int) {
	if s := w.s[i]; !s.closed.Load() {
		s.lastActive.Store(sr.now())
	}
}

func (w *scheduleSessions) beats() (n int64) {
	for _, s := range w.s {
		n += int64(s.beats.Load())
	}
	return n
}

// afterFuncSessions: time.AfterFunc for the heartbeat, re-armed in its
// callback to the next multiple of the period (so it does not drift, as a
// Ticker does not), time.AfterFunc for the idle deadline and Timer.Reset on
// activity.
type afterFuncSessions struct {
	s []*afterFuncSession
}

type afterFuncSession struct {
	sessionCore
	next     int64 // when the next heartbeat is due, ns since sr.base; its callback only
	hb, idle *time.Timer
}

func (a *afterFuncSessions) create(i int) error {
	s := &afterFuncSession{sessionCore: sessionCore{id: int32(i)}}
	s.next = sr.now() + int64(sr.Period)
	// Made stopped-far-away and then reset, so that s.hb is set before the
	// callback can read it.
	s.hb = time.AfterFunc(time.Hour, s.beat)
	s.hb.Reset(sr.Period)
	s.armed()
	s.idle = time.AfterFunc(sr.IdleLimit, s.expire)
	a.s[i] = s
	return nil
}

func (s *afterFuncSession) beat() {
	if s.closed.Load() {
		return
	}
	s.heartbeat()
	now := sr.now()
	p := int64(sr.Period)
	s.next += p
	if s.next <= now { // more than a period late: skip the missed ones
		s.next += (now - s.next + p) / p * p
	}
	s.hb.Reset(time.Duration(s.next - now))
}

func (s *afterFuncSession) expire() {
	s.expired()
	s.hb.Stop()
}

func (a *afterFuncSessions) rearm(i int) {
	if s := a.s[i]; !s.closed.Load() {
		s.idle.Reset(sr.IdleLimit)
	}
}

func (a *afterFuncSessions) beats() (n int64) {
	for _, s := range a.s {
		n += int64(s.beats.Load())
	}
	return n
}

// goroutineSessions: a goroutine per session selecting on its time.Ticker
// and its idle time.Timer; activity calls the Timer's Reset.
type goroutineSessions struct {
	s []*goroutineSession
}

type goroutineSession struct {
	sessionCore
	idle *time.Timer
}

func (g *goroutineSessions) create(i int) error {
	s := &goroutineSession{sessionCore: sessionCore{id: int32(i)}}
	s.armed()
	s.idle = time.NewTimer(sr.IdleLimit)
	g.s[i] = s
	go s.run()
	return nil
}

func (s *goroutineSession) run() {
	tk := time.NewTicker(sr.Period)
	defer tk.Stop()
	for {
		select {
		case <-tk.C:
			s.heartbeat()
		case <-s.idle.C:
			s.expired()
			return
		}
	}
}

func (g *goroutineSessions) rearm(i int) {
	if s := g.s[i]; !s.closed.Load() {
		s.idle.Reset(sr.IdleLimit)
	}
}

func (g *goroutineSessions) beats() (n int64) {
	for _, s := range g.s {
		n += int64(s.beats.Load())
	}
	return n
}

// activity re-arms the active sessions, each once per interval, on a
// goroutine locked to its thread so that the thread's CPU time is the
// re-arms' own.
type activity struct {
	on      atomic.Bool
	since   atomic.Int64 // when start last switched it on, ns since sr.base
	created atomic.Int64 // sessions made so far: the maker stores it after each batch
	rearms  atomic.Int64
	cpu     atomic.Int64 // ns of thread CPU spent in the re-arm calls
	// lateMax is the longest a slice waited past its due time before the
	// goroutine started it, in ns; the measured phases reset it.
	lateMax atomic.Int64
}

// start switches the activity on: its first slice is due now.
func (a *activity) start() {
	a.since.Store(sr.now())
	a.on.Store(true)
}

// slice is how often the activity goroutine wakes to re-arm its share.
const activitySlice = 10 * time.Millisecond

// run re-arms the sessions in slices, one due every activitySlice while on.
// Activity is traffic: messages that arrive while the goroutine is not run
// (its process waits for a CPU, say) are still there when it is, so a wake
// that comes late does every slice due since the last, rather than drop
// them as a Ticker drops ticks. Re-arms fall short of those due only when
// the re-arm calls themselves cannot keep up.
func (a *activity) run(set sessionSet, stop <-chan struct{}) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	active := sr.N - sr.N/sr.SilentEvery
	per := max(1, int((int64(active)*int64(activitySlice)+int64(sr.Activity)-1)/int64(sr.Activity)))
	tk := time.NewTicker(activitySlice)
	defer tk.Stop()
	i := 0
	next := int64(-1) // when the next slice is due, ns since sr.base; -1 while off
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		if !a.on.Load() {
			next = -1
			continue
		}
		// While the sessions are being made, the ones made so far are
		// re-armed more often than once per interval.
		n := int(a.created.Load())
		if n == 0 {
			continue
		}
		now := sr.now()
		if next < 0 {
			next = a.since.Load()
		}
		if late := now - next; late > a.lateMax.Load() {
			a.lateMax.Store(late)
		}
		// Each slice is counted as it ends, so that a phase that ends in
		// the middle of a catch-up counts the slices done before its end.
		for ; next <= now && a.on.Load(); next += int64(activitySlice) {
			c0 := measure.ThreadCPU()
			for done := 0; done < per; i = (i + 1) % n {
				if !sr.silent(i) {
					set.rearm(i)
					done++
				}
			}
			a.cpu.Add(int64(measure.ThreadCPU() - c0))
			a.rearms.Add(int64(per))
		}
	}
}

func runSessionsRole(raw []byte) error {
	var spec sessionsSpec
	if err := decodeSpec(raw, &spec); err != nil {
		return err
	}
	sr = &sessionsRun{sessionsSpec: spec, base: time.Now()}
	sr.sampleEvery = max(1, spec.N/2000)
	sr.samples = make([]*periodSamples, (spec.N+sr.sampleEvery-1)/sr.sampleEvery)
	for i := range sr.samples {
		sr.samples[i] = &periodSamples{intervals: make([]float64, 0, 4+int((spec.Warmup+3*spec.Window)/spec.Period))}
	}
	nSilent := spec.N / spec.SilentEvery
	active := spec.N - nSilent
	sr.silentCreated = make([]int64, nSilent+1)
	sr.late = make([]float64, 0, nSilent)

	var set sessionSet
	switch spec.Variant {
	case "wheel":
		t, err := startedTimer(spec.Tick)
		if err != nil {
			return err
		}
		set = &wheelSessions{t: t, s: make([]*wheelSession, spec.N)}
	case "wheel-schedule":
		t, err := startedTimer(spec.Tick)
		if err != nil {
			return err
		}
		set = &scheduleSessions{t: t, s: make([]*scheduleSession, spec.N)}
	case "afterfunc":
		set = &afterFuncSessions{s: make([]*afterFuncSession, spec.N)}
	case "goroutine":
		set = &goroutineSessions{s: make([]*goroutineSession, spec.N)}
	default:
		return fmt.Errorf("no variant %q", spec.Variant)
	}

	heap0, stacks0 := measure.LiveMemory()
	// The activity starts with the first sessions: making a million can
	// take longer than their idle limit.
	var act activity
	stop := make(chan struct{})
	go act.run(set, stop)
	act.start()
	// Make the sessions in ten batches over one period, so that their
	// heartbeats spread over it.
	const batches = 10
	start := time.Now()
	for b := range batches {
		end := (b + 1) * spec.N / batches
		for i := b * spec.N / batches; i < end; i++ {
			if err := set.create(i); err != nil {
				return err
			}
		}
		act.created.Store(int64(end))
		time.Sleep(time.Until(start.Add(time.Duration(b+1) * spec.Period / batches)))
	}
	made := time.Since(start)
	time.Sleep(spec.Warmup)
	heap1, stacks1 := measure.LiveMemory()

	// Phase A: heartbeats only.
	act.on.Store(false)
	time.Sleep(2 * activitySlice) // let a slice in progress end
	sr.recording.Store(true)
	beats0 := set.beats()
	var a measure.Window
	waitA, busyA := runQueueWait(), machineBusy()
	a.Begin()
	time.Sleep(spec.Window)
	a.End()
	othersA := othersCores(busyA, &a)
	waitA = runQueueWait() - waitA
	beatsA := set.beats() - beats0

	// Phase B: heartbeats and activity.
	rearms0, rcpu0 := act.rearms.Load(), act.cpu.Load()
	beats0 = set.beats()
	var b measure.Window
	act.lateMax.Store(0)
	waitB, busyB := runQueueWait(), machineBusy()
	act.start()
	b.Begin()
	time.Sleep(spec.Window / 2)
	goroutines := runtime.NumGoroutine()
	time.Sleep(spec.Window - spec.Window/2)
	b.End()
	othersB := othersCores(busyB, &b)
	waitB = runQueueWait() - waitB
	alive := int64(spec.N) - sr.expired.Load()
	beatsB := set.beats() - beats0
	rearms, rcpu := act.rearms.Load()-rearms0, act.cpu.Load()-rcpu0
	sr.recording.Store(false)

	// A variant that cannot keep up (on a machine shared with other
	// programs, or with more sessions than it can serve) runs its heartbeats
	// late and its re-arms late; then active sessions expire. That is the
	// figure's meaning, not a broken timer: it is reported as overloaded.
	overloaded := float64(beatsA) < 0.95*a.Wall.Seconds()*float64(spec.N)/spec.Period.Seconds() ||
		float64(rearms) < 0.95*b.Wall.Seconds()*float64(active)/spec.Activity.Seconds()

	// Every silent session expires an idle limit after it was made; an
	// overloaded variant's expiries are seconds late, and not waited for.
	waitUntil := start.Add(made + spec.IdleLimit + 5*time.Second + 10*spec.Tick)
	for !overloaded && sr.expired.Load() < int64(nSilent) && time.Now().Before(waitUntil) {
		time.Sleep(10 * time.Millisecond)
	}
	act.on.Store(false)
	close(stop)

	m := map[string]float64{
		"sessions":        float64(spec.N),
		"make_s":          made.Seconds(),
		"mem_per_session": (float64(heap1+stacks1) - float64(heap0+stacks0)) / float64(spec.N),
		"heap_per_sess":   (float64(heap1) - float64(heap0)) / float64(spec.N),
		"cores_hb":        a.Cores(),
		"cpu_ns_beat":     nsPer(a.CPU, beatsA),
		"beats_per_s":     float64(beatsA) / a.Wall.Seconds(),
		"expected_beats":  float64(spec.N) / spec.Period.Seconds(),
		"cores":           b.Cores(),
		"rearms_per_s":    float64(rearms) / b.Wall.Seconds(),
		"rearm_ns_caller": nsPer(time.Duration(rcpu), rearms),
		// Phase B's CPU beyond phase A's, at A's rate per heartbeat.
		"rearm_ns_process": nsPer(b.CPU-time.Duration(float64(a.CPU)*float64(beatsB)/float64(max(beatsA, 1))), rearms),
		// Phase B's allocations beyond phase A's, at A's rate per second.
		"rearm_allocs": (float64(b.Mallocs) - float64(a.Mallocs)*b.Wall.Seconds()/a.Wall.Seconds()) / float64(max(rearms, 1)),
		"rearm_target": float64(active) / spec.Activity.Seconds(),
		"goroutines":   float64(goroutines),
		"alive_end":    float64(alive),
		"gcs":          float64(a.GCs + b.GCs),
		// The cores other programs kept busy in each phase, and the time
		// this process's threads waited, runnable, for a CPU, per second.
		"others_cores_a": othersA,
		"others_cores_b": othersB,
		"runq_wait_a":    waitA.Seconds() / a.Wall.Seconds(),
		"runq_wait_b":    waitB.Seconds() / b.Wall.Seconds(),
		// The longest the activity goroutine woke after a slice was due
		// in phase B (it then did the slices it missed).
		"activity_late_ms": measure.Millis(time.Duration(act.lateMax.Load())),
	}
	var intervals []float64
	for _, ps := range sr.samples {
		ps.mu.Lock()
		intervals = append(intervals, ps.intervals...)
		ps.mu.Unlock()
	}
	latenessFigures(m, "period", intervals)
	sum := 0.0
	for _, v := range intervals {
		sum += v
	}
	if len(intervals) > 0 {
		m["period_mean_ms"] = sum / float64(len(intervals))
	}
	sr.mu.Lock()
	latenessFigures(m, "idle_late", sr.late)
	sr.mu.Unlock()
	m["idle_early"] = float64(sr.early.Load())
	m["active_expired"] = float64(sr.activeExpired.Load())

	m["overloaded"] = 0
	if overloaded {
		m["overloaded"] = 1
	}
	var o outcome
	o.Metrics = m
	if e := sr.early.Load(); e > 0 {
		o.Violations = append(o.Violations, fmt.Sprintf("%d idle deadlines ran before they were due", e))
	}
	if e := sr.activeExpired.Load(); e > 0 && !overloaded {
		o.Violations = append(o.Violations, fmt.Sprintf("%d active sessions expired, though the heartbeats and re-arms kept up", e))
	}
	if got := sr.expired.Load() - sr.activeExpired.Load(); got < int64(nSilent) && !overloaded {
		o.Violations = append(o.Violations, fmt.Sprintf("%d of %d silent sessions expired", got, nSilent))
	}
	return newControl().reply(o)
}

// startedTimer returns a hashedwheel Timer with the given tick, its worker
// started.
func startedTimer(tick time.Duration) (*hashedwheel.Timer, error) {
	t, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tick))
	if err != nil {
		return nil, err
	}
	return t, t.Start()
}
