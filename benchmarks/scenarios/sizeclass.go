package main

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hashedwheel/hashedwheel"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/report"
)

// Sessions near a size class: N sessions whose struct is just under a size
// class of the Go allocator, each with a heartbeat every period re-armed by
// its own task, and the timer held four ways. One process per variant:
//
//  1. the sessions are made, their first heartbeats spread over the period
//     after the next;
//  2. they beat for the settle time (three periods by default), so that
//     every timer has been re-armed;
//  3. the live heap and stacks per session are read after a full GC,
//     against the same read before the sessions were made.
//
// The struct is 6,872 bytes, as nats-server's client struct was when issue
// 34 moved its ping timer into it: an object over 512 bytes that holds
// pointers gets an 8-byte header from the runtime, so it takes 6,880 bytes
// of the 6,912-byte class. A pointer more (8 bytes) keeps it there; an
// embedded Timeout (64 bytes) takes it to 6,936 bytes, into the 8,192-byte
// class. Nothing here is CPU-sensitive: bytes are the same on a busy
// machine.

// sizeClassStruct is the size of the session struct without its timer.
const sizeClassStruct = 6872

func sizeClassScenario(p params) *scenario {
	return &scenario{
		Name:  "sizeclass",
		Title: "Sessions near a size class: a Timeout embedded or by pointer",
		Variants: []variant{
			{ID: "none", Label: "no timer", API: fmt.Sprintf("the %s-byte session struct alone, with no heartbeat: the baseline", num(sizeClassStruct, 0))},
			{ID: "embedded", Label: "Timeout embedded", API: "a hashedwheel.Timeout in the struct, re-armed by its task (the session) with Timer.ScheduleAt at its deadline plus the period"},
			{ID: "pointer", Label: "Timeout by pointer", API: "a *hashedwheel.Timeout in the struct, made by new(hashedwheel.Timeout) with the session, re-armed the same way"},
			{ID: "afterfunc", Label: "time.AfterFunc", API: "a *time.Timer in the struct, made by time.AfterFunc and re-armed in its callback with Reset", Base: true},
		},
		Cases: []int{0},
		run:   runSizeClass,
	}
}

// sizeClassSpec is the -spec of a sizeclass process.
type sizeClassSpec struct {
	Variant string        `json:"variant"`
	N       int           `json:"n"`
	Period  time.Duration `json:"period"`
	Settle  time.Duration `json:"settle"`
	Tick    time.Duration `json:"tick"`
}

func runSizeClass(p params, v variant, _ int) (outcome, error) {
	c, err := startChild("sizeclass", sizeClassSpec{
		Variant: v.ID, N: p.SizeClassSessions, Period: p.Period, Settle: p.SizeClassSettle, Tick: p.Tick,
	})
	if err != nil {
		return outcome{}, err
	}
	var o outcome
	l, err := c.expect(2*time.Minute + 2*p.Period + p.SizeClassSettle)
	if err == nil {
		err = decodeSpec([]byte(l), &o)
	}
	if err != nil {
		c.kill()
		return outcome{}, err
	}
	return o, c.finish(10 * time.Second)
}

// scSession is the session without its timer: an id, what its heartbeat
// counts, a name (a pointer, as a real session holds: it makes the runtime
// give the object a header) and the rest of its state.
type scSession struct {
	id    int64
	beats atomic.Int64
	name  string
	rest  [sizeClassStruct - 32]byte
}

func (s *scSession) init(i int) {
	s.id = int64(i)
	s.name = "session"
	s.rest[0] = byte(i)
}

type scEmbedded struct {
	scSession
	timeout hashedwheel.Timeout
}

type scPointer struct {
	scSession
	timeout *hashedwheel.Timeout
}

type scAfterFunc struct {
	scSession
	timer *time.Timer
}

// scPeriod is the heartbeat period of the process's sessions.
var scPeriod time.Duration

// Run re-arms the Timeout first, a period after the deadline it ran for (it
// fails only once the Timer is stopped), then beats.
func (s *scEmbedded) Run(to *hashedwheel.Timeout) {
	_ = to.Timer().ScheduleAt(to, s, to.Deadline().Add(scPeriod))
	s.beats.Add(1)
}

func (s *scPointer) Run(to *hashedwheel.Timeout) {
	_ = to.Timer().ScheduleAt(to, s, to.Deadline().Add(scPeriod))
	s.beats.Add(1)
}

func (s *scAfterFunc) beat() {
	s.timer.Reset(scPeriod)
	s.beats.Add(1)
}

func runSizeClassRole(raw []byte) error {
	var spec sizeClassSpec
	if err := decodeSpec(raw, &spec); err != nil {
		return err
	}
	scPeriod = spec.Period
	if got := unsafe.Sizeof(scSession{}); got != sizeClassStruct {
		return fmt.Errorf("the session struct is %d bytes on %s, not %d", got, runtime.GOARCH, sizeClassStruct)
	}
	var timer *hashedwheel.Timer
	if spec.Variant == "embedded" || spec.Variant == "pointer" {
		var err error
		if timer, err = startedTimer(spec.Tick); err != nil {
			return err
		}
		defer timer.Stop()
	}
	// The sessions, by pointer, as a server keeps them: the index is made
	// before the baseline.
	var (
		size  uintptr
		make1 func(i int, first time.Time) error
		beats func(i int) int64 // nil for the variant with no heartbeat
	)
	switch spec.Variant {
	case "none":
		s := make([]*scSession, spec.N)
		size = unsafe.Sizeof(scSession{})
		make1 = func(i int, _ time.Time) error { s[i] = new(scSession); s[i].init(i); return nil }
		defer runtime.KeepAlive(s)
	case "embedded":
		s := make([]*scEmbedded, spec.N)
		size = unsafe.Sizeof(scEmbedded{})
		make1 = func(i int, first time.Time) error {
			s[i] = new(scEmbedded)
			s[i].init(i)
			return timer.ScheduleAt(&s[i].timeout, s[i], first)
		}
		beats = func(i int) int64 { return s[i].beats.Load() }
		defer runtime.KeepAlive(s)
	case "pointer":
		s := make([]*scPointer, spec.N)
		size = unsafe.Sizeof(scPointer{})
		make1 = func(i int, first time.Time) error {
			s[i] = &scPointer{timeout: new(hashedwheel.Timeout)}
			s[i].init(i)
			return timer.ScheduleAt(s[i].timeout, s[i], first)
		}
		beats = func(i int) int64 { return s[i].beats.Load() }
		defer runtime.KeepAlive(s)
	case "afterfunc":
		s := make([]*scAfterFunc, spec.N)
		size = unsafe.Sizeof(scAfterFunc{})
		make1 = func(i int, first time.Time) error {
			s[i] = new(scAfterFunc)
			s[i].init(i)
			// Made an hour away and then moved, so that timer is set
			// before the callback can run.
			s[i].timer = time.AfterFunc(time.Hour, s[i].beat)
			s[i].timer.Reset(time.Until(first))
			return nil
		}
		beats = func(i int) int64 { return s[i].beats.Load() }
		defer runtime.KeepAlive(s)
	default:
		return fmt.Errorf("no variant %q", spec.Variant)
	}

	heap0, stacks0 := measure.LiveMemory()
	var w measure.Window
	w.Begin()
	start := time.Now()
	for i := range spec.N {
		if err := make1(i, start.Add(spec.Period+time.Duration(i)*spec.Period/time.Duration(spec.N))); err != nil {
			return err
		}
	}
	w.End()
	time.Sleep(spec.Settle)
	heap1, stacks1 := measure.LiveMemory()

	n := float64(spec.N)
	o := outcome{Metrics: map[string]float64{
		"sessions":         n,
		"struct_bytes":     float64(size),
		"alloc_per_sess":   float64(w.Bytes) / n,
		"mallocs_per_sess": float64(w.Mallocs) / n,
		"mem_per_session":  (float64(heap1+stacks1) - float64(heap0+stacks0)) / n,
		"heap_per_sess":    (float64(heap1) - float64(heap0)) / n,
	}}
	if beats != nil {
		var total int64
		beaten := 0
		for i := range spec.N {
			b := beats(i)
			total += b
			if b > 0 {
				beaten++
			}
		}
		o.Metrics["beats_per_sess"] = float64(total) / n
		if beaten < spec.N {
			o.Violations = append(o.Violations, fmt.Sprintf("%d of %d sessions never beat in %v", spec.N-beaten, spec.N, spec.Settle))
		}
	}
	return newControl().reply(o)
}

// deriveSizeClass adds to each round of the sizeclass scenario the bytes
// per session beyond the struct alone: the variant's figure less the one
// the no-timer variant measured in the same round.
func (rep *Report) deriveSizeClass() {
	none := rep.get("sizeclass", 0, "none")
	if none == nil {
		return
	}
	base := map[int]map[string]float64{}
	for i, k := range none.roundOf() {
		base[k] = none.Reps[i]
	}
	for _, r := range rep.Results {
		if r.Scenario != "sizeclass" {
			continue
		}
		for i, k := range r.roundOf() {
			b, ok := base[k]
			if !ok {
				continue
			}
			m := r.Reps[i]
			m["mem_beyond"] = m["mem_per_session"] - b["mem_per_session"]
			m["alloc_beyond"] = m["alloc_per_sess"] - b["alloc_per_sess"]
		}
	}
}

// The sections of other documents that the sizeclass scenario writes with
// -section, between these markers.
const (
	sizeClassBegin = "<!-- scenarios sizeclass: begin (written by benchmarks/scenarios -section, do not edit) -->"
	sizeClassEnd   = "<!-- scenarios sizeclass: end -->"
)

// sizeClassCols are the columns of the sizeclass table.
var sizeClassCols = []col{
	{title: "struct B", metric: "struct_bytes"},
	{title: "B allocated per session", metric: "alloc_per_sess", spread: true},
	{title: "allocations per session", metric: "mallocs_per_sess", prec: 2},
	{title: "live B per session", metric: "mem_per_session", spread: true},
	{title: "beyond the struct alone", metric: "mem_beyond", spread: true, notFor: "none"},
	{title: "× time.AfterFunc", metric: "mem_beyond", ratio: true, notFor: "none"},
	{title: "heartbeats per session", metric: "beats_per_sess", prec: 1},
}

func (rep *Report) sizeClassSection(b *strings.Builder, sc *scenario) {
	p := rep.Params
	fmt.Fprintf(b, "## %s\n\n", sc.Title)
	fmt.Fprintf(b, "%s sessions of a %s-byte struct that holds pointers, as nats-server's client struct was (the runtime gives such an object over 512 bytes an 8-byte header, which its size class must hold too: %s of the 6,912-byte class), each with a heartbeat every %v re-armed by its own timer; after they beat for %v, the live heap and goroutine stacks are read after a full GC, less the same before they were made, over N. One process per variant and round. Variants:\n\n",
		num(float64(p.SizeClassSessions), 0), num(sizeClassStruct, 0), num(sizeClassStruct+8, 0), dur(p.Period), dur(p.SizeClassSettle))
	rep.apis(b, sc)
	fmt.Fprintf(b, "Reproduce: %s\n\n", rep.reproduce(sc.Name))
	rep.sizeClassTable(b, sc)
	b.WriteString("\n")
}

// sizeClassTable writes the table, the ratio of the embedded Timeout to
// the one by pointer, and what the columns mean.
func (rep *Report) sizeClassTable(b *strings.Builder, sc *scenario) {
	rep.table(b, sc, sizeClassCols)
	if q, ok := rep.ratio(sc.Name, 0, "embedded", "pointer", "mem_beyond"); ok {
		fmt.Fprintf(b, "\nBeyond the struct alone, the embedded Timeout costs %s the one by pointer, round by round.\n", q)
	}
	b.WriteString("\nB allocated per session: the bytes the allocator handed out while the sessions were made (each object rounded up to its size class), over N; live B per session: the heap and stacks after a full GC with the sessions beating, over N; beyond the struct alone: that less the no-timer variant's in the same round.\n")
}

// updateSections rewrites, in the markdown file at path, the sections the
// run's scenarios write (the sizeclass table, between its markers).
func (rep *Report) updateSections(path string) error {
	sc := rep.scenario("sizeclass")
	if sc == nil {
		return fmt.Errorf("-section %s: the run has no scenario that writes a section (sizeclass)", path)
	}
	var b strings.Builder
	rep.sizeClassTable(&b, sc)
	m, p := rep.Meta, rep.Params
	fmt.Fprintf(&b, "\n%s sessions of %s bytes, a heartbeat every %v, %d rounds, %s on %d cores (%s), %s; `%s`.",
		num(float64(p.SizeClassSessions), 0), num(sizeClassStruct, 0), dur(p.Period), p.Rounds, m.Date, m.Cores, m.CPU, m.Go, m.Command)
	if m.Quick {
		b.WriteString(" **Quick mode: tiny sizes, the figures mean nothing.**")
	}
	b.WriteString("\n")
	return report.ReplaceBetween(path, sizeClassBegin, sizeClassEnd, b.String())
}
