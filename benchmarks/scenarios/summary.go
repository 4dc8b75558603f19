package main

import (
	"fmt"
	"slices"
	"strings"
)

// comparison is variant a against variant b on one figure where less is
// better.
type comparison struct {
	a, b    float64 // medians of each variant's own rounds
	ratio   float64 // the median of the round-by-round ratios a / b
	q       *Ratio
	verdict string // "less", "more", "even" or "few" (see Ratio.Verdict)
}

// compare compares a with b round by round (see Report.ratio).
func (rep *Report) compare(scenario string, c int, a, b, metric string) (comparison, bool) {
	q, ok := rep.ratio(scenario, c, a, b, metric)
	if !ok {
		return comparison{}, false
	}
	va, _ := rep.value(scenario, c, a, metric)
	vb, _ := rep.value(scenario, c, b, metric)
	return comparison{a: va, b: vb, ratio: q.Median, q: q, verdict: q.Verdict}, true
}

// word is a verdict for the reader: the wheel wins where it takes less.
func (c comparison) word() string {
	switch c.verdict {
	case "less":
		return "wins"
	case "more":
		return "costs more"
	case "few":
		return c.q.NoVerdictYet()
	}
	return "even"
}

// versus writes "0.15× [0.12–0.18] Label (0.14 against 0.95 unit)".
func (c comparison) versus(label string, prec int, unit string) string {
	return fmt.Sprintf("%s %s (%s against %s%s)", c.q, label, num(c.a, prec), num(c.b, prec), unit)
}

// summary is the "What this means for you" list: one item per job, each
// claim with its scenario and ratio, and then where the standard library is
// as good.
func (rep *Report) summary() string {
	var b strings.Builder
	var keep []string
	p := rep.Params
	item := func(verdict, text string) {
		fmt.Fprintf(&b, "- **%s**: %s\n", strings.ToUpper(verdict[:1])+verdict[1:], text)
	}
	fmt.Fprintf(&b, "Generated from the tables below. Each ratio is the median of the round-by-round ratios (each round's run of one variant over the other's in the same round), with their range; a claim is a win or a cost only where all of at least %d rounds fall on the same side of 1 and the median is %.0f%% or more from 1; where the rounds disagree it is even.\n\n", minVerdictRounds, 100*evenWithin)

	if sc := rep.scenario("sessions"); sc != nil {
		// The largest count at which both kept up; a count at which the
		// standard library fell behind is said so.
		n := 0
		for _, c := range sc.Cases {
			w, a := rep.get(sc.Name, c, "wheel"), rep.get(sc.Name, c, "afterfunc")
			if w != nil && a != nil && w.Median != nil && a.Median != nil && !w.overloaded() && !a.overloaded() {
				n = max(n, c)
			}
		}
		for _, c := range sc.Cases {
			w, a := rep.get(sc.Name, c, "wheel"), rep.get(sc.Name, c, "afterfunc")
			if c <= n || w == nil || a == nil || w.Median == nil || a.Median == nil || w.overloaded() || !a.overloaded() {
				continue
			}
			text := fmt.Sprintf("[Sessions](#sessions-heartbeats-and-idle-deadlines-in-memory), %s sessions, a heartbeat every %v and an idle deadline re-armed every %v: hashedwheel held them with %s cores (%s heartbeats/s, every active session alive); time.AfterFunc could not keep up on this machine in %d of %d rounds: at best %s of %s heartbeats/s, up to %s goroutines of queued callbacks, its re-arms came too late and %s active sessions expired (median)",
				count(c), dur(p.Period), dur(p.Activity), num(w.Median["cores"], 3), num(w.Median["beats_per_s"], 0),
				a.roundsWith("overloaded"), len(a.Reps), num(a.Max["beats_per_s"], 0), num(a.Median["expected_beats"], 0),
				num(a.Max["goroutines"], 0), num(a.Median["active_expired"], 0))
			if g := rep.get(sc.Name, c, "goroutine"); g != nil && g.Median != nil && g.overloaded() {
				text += fmt.Sprintf("; a goroutine and Ticker per session took up to %s cores and fell behind too", num(g.Max["cores"], 2))
			}
			item("wins", text+".")
		}
		if n == 0 {
			n = slices.Max(sc.Cases)
		}
		where := fmt.Sprintf("[Sessions](#sessions-heartbeats-and-idle-deadlines-in-memory), %s sessions, a heartbeat every %v and an idle deadline re-armed every %v", count(n), dur(p.Period), dur(p.Activity))
		if c, ok := rep.compare(sc.Name, n, "wheel", "afterfunc", "cores"); ok {
			text := where + ": hashedwheel used " + c.versus("time.AfterFunc", 3, " cores")
			if g, ok := rep.compare(sc.Name, n, "wheel", "goroutine", "cores"); ok {
				text += ", " + g.versus("a goroutine and Ticker per session", 3, " cores")
			}
			// Cores used is phase B's, where one slow round moves it most;
			// the CPU per heartbeat (phase A) and the memory have verdicts
			// of their own, and the heartbeats are kept only where none wins.
			saved := false
			if h, ok := rep.compare(sc.Name, n, "wheel", "afterfunc", "cpu_ns_beat"); ok {
				text += "; per heartbeat " + h.versus("time.AfterFunc", 0, " ns") + " (" + h.word() + ")"
				saved = h.verdict == "less"
			}
			if m, ok := rep.compare(sc.Name, n, "wheel", "afterfunc", "mem_per_session"); ok {
				text += "; memory per session " + m.versus("time.AfterFunc", 0, " B") + " (" + m.word() + ")"
				saved = saved || m.verdict == "less"
			}
			verdict := c.word()
			if c.verdict == "even" && saved {
				verdict = "wins per heartbeat and in memory; cores used even over the rounds"
			}
			item(verdict, text+".")
			if (c.verdict == "even" || c.verdict == "more") && !saved {
				keep = append(keep, "in-memory heartbeats, where the wheel saved nothing here")
			}
		}
		if c, ok := rep.compare(sc.Name, n, "wheel", "afterfunc", "rearm_ns_caller"); ok {
			item(c.word(), fmt.Sprintf("%s: re-arming an idle deadline on activity cost the caller %s with `Timeout.Reset`.", where, c.versus("`time.Timer.Reset`", 0, " ns")))
		}
		if a, ok := rep.compare(sc.Name, n, "wheel-schedule", "afterfunc", "mem_per_session"); ok {
			text := fmt.Sprintf("%s, one `Timeout` in each session re-armed by its own task (`Timer.ScheduleAt`; activity only notes its time): memory per session %s", where, a.versus("time.AfterFunc", 0, " B"))
			if m, ok := rep.compare(sc.Name, n, "wheel-schedule", "wheel", "mem_per_session"); ok {
				text += ", " + m.versus("`Every`+`AfterFunc` per session", 0, " B") + " (" + m.word() + ")"
			}
			if h, ok := rep.compare(sc.Name, n, "wheel-schedule", "wheel", "cpu_ns_beat"); ok {
				text += "; per heartbeat " + h.versus("`Every`+`AfterFunc`", 0, " ns") + " (" + h.word() + ")"
			}
			item(a.word(), text+".")
		}
	}

	for _, r := range []regime{regimeBusy, regimeIdle} {
		sc := rep.scenario("eventloop-" + string(r))
		if sc == nil {
			continue
		}
		var where, metric, what, unit string
		var prec int
		switch r {
		case regimeBusy:
			where = fmt.Sprintf("[Event loop, busy](#event-loop-busy-gnet) (gnet, %s connections, idle limit %v, a message every %v)", num(float64(p.BusyConns), 0), dur(p.BusyLimit), dur(p.BusyLimit/4))
			metric, what, unit, prec = "cpu_us_msg", "server CPU per message", " µs", 2
		case regimeIdle:
			conns := rep.conns(sc, "wheel")
			where = fmt.Sprintf("[Event loop, mostly idle](#event-loop-mostly-idle-gnet) (gnet, %s connections, pings every %v)", num(conns, 0), dur(p.IdlePing))
			metric, what, unit, prec = "cores", "server CPU", " cores", 3
		}
		share := func(v string) string {
			x, _ := rep.value(sc.Name, 0, v, "timer_share")
			return fmt.Sprintf("%.1f%%", 100*x)
		}
		// One clause per way of using the wheel that the run has: its
		// worker, and driven by the loop.
		var clauses []string
		var best comparison // the cheapest wheel against the heap
		bestFound := false
		verdict := ""
		for _, wv := range []struct{ id, label string }{
			{"wheel", "with hashedwheel's worker"},
			{"wheel-owner", "with hashedwheel driven by the loop (`WithoutWorker`, `Advance` in a sweep on the loop)"},
			{"wheel-lazy", "with hashedwheel driven by the loop and one timeout per connection re-armed lazily, as the heap is"},
			{"wheel-schedule", "with the same, the timeout in the connection and re-armed by its own task (`Timer.Schedule`)"},
		} {
			h, okh := rep.compare(sc.Name, 0, wv.id, "heap", metric)
			a, oka := rep.compare(sc.Name, 0, wv.id, "afterfunc", metric)
			if !okh || !oka {
				continue
			}
			clauses = append(clauses, fmt.Sprintf("%s %s and %s (timers %s of it)", wv.label,
				h.versus("the min-heap in OnTick", prec, unit), a.versus("time.AfterFunc", prec, unit), share(wv.id)))
			if !bestFound || h.ratio < best.ratio {
				best, bestFound = h, true
				switch {
				case h.verdict == "less":
					verdict = "wins"
				case a.verdict == "less":
					verdict = "even with the heap, wins over time.AfterFunc"
				default:
					verdict = h.word()
				}
			}
		}
		if !bestFound {
			continue
		}
		text := fmt.Sprintf("%s: %s %s; the timers took %s of it with the heap and %s with time.AfterFunc",
			where, what, strings.Join(clauses, "; "), share("heap"), share("afterfunc"))
		for _, wv := range []string{"wheel", "wheel-owner", "wheel-lazy", "wheel-schedule"} {
			m, ok := rep.compare(sc.Name, 0, wv, "afterfunc", "heap_per_conn")
			if !ok {
				continue
			}
			mh, _ := rep.compare(sc.Name, 0, wv, "heap", "heap_per_conn")
			text += fmt.Sprintf("; heap per connection (%s) %s, %s", sc.label(wv), m.versus("time.AfterFunc", 0, " B"), mh.versus("the heap", 0, " B"))
		}
		if best.verdict == "more" {
			verdict = "costs more than the heap"
			keep = append(keep, fmt.Sprintf("an event loop in the %s regime, where a min-heap swept on the loop cost less (the cheapest wheel %.2f×)", r, best.ratio))
		}
		item(verdict, text+".")
	}

	if sc := rep.scenario("goroutine"); sc != nil {
		c, ok1 := rep.compare(sc.Name, 0, "wheel", "deadline", "cpu_us_msg")
		a, ok2 := rep.compare(sc.Name, 0, "afterfunc", "deadline", "cpu_us_msg")
		if ok1 && ok2 {
			item(c.word(), fmt.Sprintf("[Goroutine per connection](#goroutine-per-connection-a-tcp-server-closing-idle-connections) (%s connections, idle limit %v): server CPU per message with `Timeout.Reset` %s; with `time.AfterFunc`+`Reset` %.2f×.",
				num(float64(p.GrConns), 0), dur(p.GrLimit), c.versus("`conn.SetReadDeadline`", 2, " µs"), a.ratio))
			if c.verdict == "even" || c.verdict == "more" {
				keep = append(keep, "a goroutine per connection closing on a read deadline: `conn.SetReadDeadline` is as cheap, and the poller keeps it")
			}
		}
	}

	if sc := rep.scenario("http"); sc != nil {
		c, ok := rep.compare(sc.Name, 0, "wheel", "context", "cpu_us_req")
		if ok {
			text := fmt.Sprintf("[Request deadlines, server](#request-deadlines-server-nethttp) (net/http, the deadline derived from `r.Context()`): server CPU per request with `Timer.WithTimeout` %s", c.versus("`context.WithTimeout`", 2, " µs"))
			if al, ok := rep.compare(sc.Name, 0, "wheel", "context", "allocs_req"); ok {
				text += fmt.Sprintf("; %s against %s allocations per request", num(al.a, 1), num(al.b, 1))
			}
			if none, ok := rep.value(sc.Name, 0, "none", "cpu_us_req"); ok {
				text += fmt.Sprintf("; beyond a handler with no deadline, the deadline took %.1f%% of the request's CPU with the wheel and %.1f%% with the context package (a difference of a few percent is within this machine's noise)", 100*(c.a-none)/c.a, 100*(c.b-none)/c.b)
			}
			item(c.word(), text+".")
			if c.verdict == "even" || c.verdict == "more" {
				keep = append(keep, "a net/http handler's deadline derived from `r.Context()`: `context.WithTimeout` costs the same or less, the request's own work dominates")
			}
		}
	}

	if sc := rep.scenario("rpc"); sc != nil {
		c, ok1 := rep.compare(sc.Name, 0, "wheel", "afterfunc", "cpu_ns_req")
		x, ok2 := rep.compare(sc.Name, 0, "wheelctx", "context", "cpu_ns_req")
		if ok1 && ok2 {
			text := fmt.Sprintf("[Request deadlines, client](#request-deadlines-client-pipelined-requests) (%s requests in flight on one connection, each with its deadline): client CPU per request with `NewTimeout`+`Cancel` %s; with `Timer.WithTimeout` %s (%s)",
				num(float64(p.RPCInFlight), 0), c.versus("`time.AfterFunc`+`Stop`", 0, " ns"), x.versus("`context.WithTimeout`", 0, " ns"), x.word())
			if none, ok := rep.value(sc.Name, 0, "none", "cpu_ns_req"); ok {
				text += fmt.Sprintf("; beyond a client with no deadline, the deadline took %.0f%% of the client's CPU per request with `NewTimeout`, %.0f%% with time.AfterFunc", 100*(c.a-none)/c.a, 100*(c.b-none)/c.b)
			}
			item(c.word(), text+".")
			if x.verdict == "even" || x.verdict == "more" {
				keep = append(keep, "request contexts from `context.Background()` in a client: `context.WithTimeout` was no dearer here")
			}
		}
	}

	if sc := rep.scenario("sizeclass"); sc != nil {
		e, oke := rep.compare(sc.Name, 0, "embedded", "afterfunc", "mem_beyond")
		ptr, okp := rep.compare(sc.Name, 0, "pointer", "afterfunc", "mem_beyond")
		if oke && okp {
			verdict := "by pointer " + ptr.word() + ", embedded " + e.word()
			if e.verdict == ptr.verdict {
				verdict = e.word()
			}
			item(verdict, fmt.Sprintf("[Sessions near a size class](#sessions-near-a-size-class-a-timeout-embedded-or-by-pointer) (%s sessions of a %s-byte struct, a heartbeat each every %v): beyond the struct alone, a `Timeout` embedded in it took %s, one held by pointer %s.",
				num(float64(p.SizeClassSessions), 0), num(sizeClassStruct, 0), dur(p.Period), e.versus("time.AfterFunc", 0, " B"), ptr.versus("time.AfterFunc", 0, " B")))
		}
	}

	if len(keep) > 0 {
		b.WriteString("\nWhere to keep the standard library (or what you have): ")
		b.WriteString(strings.Join(keep, "; ") + ".\n")
	}
	return b.String()
}
