package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/report"
)

// get returns the result of a variant on a case of a scenario, or nil.
func (rep *Report) get(scenario string, c int, v string) *Result {
	for _, r := range rep.Results {
		if r.Scenario == scenario && r.Case == c && r.Variant == v {
			return r
		}
	}
	return nil
}

func (rep *Report) scenario(name string) *scenario {
	for _, s := range rep.Scenarios {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// value returns a median figure, and false if there is none.
func (rep *Report) value(scenario string, c int, v, metric string) (float64, bool) {
	r := rep.get(scenario, c, v)
	if r == nil || r.Median == nil {
		return 0, false
	}
	x, ok := r.Median[metric]
	return x, ok && !math.IsNaN(x)
}

// conns is the number of connections of a one-case scenario: the median of
// the first of prefer that ran, else of the first variant that did, as a
// run of some variants (-variants) may lack the preferred one; 0 if none.
func (rep *Report) conns(sc *scenario, prefer ...string) float64 {
	for _, v := range sc.Variants {
		prefer = append(prefer, v.ID)
	}
	for _, id := range prefer {
		if x, ok := rep.value(sc.Name, 0, id, "conns"); ok {
			return x
		}
	}
	return 0
}

func (sc *scenario) base() string {
	for _, v := range sc.Variants {
		if v.Base {
			return v.ID
		}
	}
	return ""
}

func (sc *scenario) label(id string) string {
	for _, v := range sc.Variants {
		if v.ID == id {
			return v.Label
		}
	}
	return id
}

// col is a column of a table: a median figure with its range over the
// rounds, or its ratio to the scenario's standard-library variant.
type col struct {
	title  string
	metric string
	prec   int
	scale  float64 // multiply by, if not 0 (100 for a share in %)
	spread bool    // add the range over the rounds
	ratio  bool    // the median of the round-by-round ratios to the base variant, their range, and "even" if they do not all fall on one side of 1
	rounds bool    // the rounds in which the figure was not 0, of all
	// perOp marks a cost per operation, meaningless in a round where the
	// variant could not keep up (sessions: "overloaded").
	perOp bool
	// notFor is a variant the figure means nothing for ("–" in its row).
	notFor string
}

// overloaded reports whether a result could not keep up in most rounds.
func (r *Result) overloaded() bool { return r.Median["overloaded"] >= 0.5 }

// table writes one row per variant (and case, if the scenario has several).
func (rep *Report) table(b *strings.Builder, sc *scenario, cols []col) {
	multi := len(sc.Cases) > 1
	var head []report.Column
	if multi {
		head = append(head, report.Column{Title: "sessions", Right: true})
	}
	head = append(head, report.Column{Title: "variant"})
	for _, c := range cols {
		head = append(head, report.Column{Title: c.title, Right: true})
	}
	report.TableHead(b, head...)
	for _, cs := range sc.Cases {
		for _, v := range sc.Variants {
			r := rep.get(sc.Name, cs, v.ID)
			if r == nil {
				continue
			}
			var row []string
			if multi {
				row = append(row, count(cs))
			}
			label := v.Label
			if n := r.roundsWith("overloaded"); n > 0 {
				label += fmt.Sprintf(" (overloaded in %d of %d rounds)", n, len(r.Reps))
			}
			row = append(row, label)
			for _, c := range cols {
				if r.Median == nil {
					row = append(row, "failed")
				} else {
					row = append(row, rep.cell(sc, cs, r, c))
				}
			}
			report.TableRow(b, row...)
		}
	}
}

func (rep *Report) cell(sc *scenario, cs int, r *Result, c col) string {
	v, ok := r.Median[c.metric]
	if !ok || math.IsNaN(v) || r.Variant == c.notFor {
		return "–"
	}
	scale := c.scale
	if scale == 0 {
		scale = 1
	}
	if c.rounds {
		return fmt.Sprintf("%d of %d", r.roundsWith(c.metric), len(r.Reps))
	}
	if c.perOp && r.overloaded() {
		return "overloaded"
	}
	if c.ratio {
		if r.Variant == sc.base() {
			return "1"
		}
		// Round by round; a round in which either fell behind has no cost
		// to compare, and is left out.
		q, ok := rep.ratio(sc.Name, cs, r.Variant, sc.base(), c.metric)
		if !ok {
			return "–"
		}
		return q.Cell()
	}
	s := num(v*scale, c.prec)
	if c.spread && len(r.Reps) > 1 {
		lo, hi := r.Min[c.metric]*scale, r.Max[c.metric]*scale
		if num(lo, c.prec) != num(hi, c.prec) {
			s += fmt.Sprintf(" <sub>%s–%s</sub>", num(lo, c.prec), num(hi, c.prec))
		}
	}
	return s
}

// roundsWith counts the rounds in which a figure was not 0.
func (r *Result) roundsWith(metric string) int {
	n := 0
	for _, rep := range r.Reps {
		if rep[metric] != 0 {
			n++
		}
	}
	return n
}

// num writes v with prec decimals, thousands separated by commas, and "–"
// for NaN.
func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return report.Grouped(v, prec, "-")
}

func dur(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// reproduce is the command that runs one scenario again with the run's
// sizes, writing to a fresh directory (and not to the README).
func (rep *Report) reproduce(name string) string {
	cmd := "cd benchmarks && go run ./scenarios -run " + name
	args := strings.Fields(strings.TrimPrefix(rep.Meta.Command, "cd benchmarks && go run ./scenarios"))
	for i := 0; i < len(args); i++ {
		a := args[i]
		flagName, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if flagName == "run" || flagName == "out" || flagName == "variants" || flagName == "readme" || flagName == "section" {
			if !hasValue {
				i++ // its value is the next argument
			}
			continue
		}
		cmd += " " + a
	}
	return "`" + cmd + " -out \"$(mktemp -d)\"`"
}

// Markdown returns scenarios.md.
func (rep *Report) Markdown() string {
	var b strings.Builder
	m := rep.Meta
	p := rep.Params
	b.WriteString("# Scenario benchmarks\n\n")
	b.WriteString("Written by `benchmarks/scenarios` (do not edit; run it again). The microbenchmarks in [benchmarks.md](benchmarks.md) compare the calls; these programs ask what a user asks: in a program like mine, how much CPU and memory does the wheel save, and where does it save nothing? Each scenario is a small program shaped like a user's, written once per variant; the variant ratios are to the standard-library way of doing the same job in the same run.\n\n")
	fmt.Fprintf(&b, "**Method.** Every run of every variant is a fresh process (this command again, with `-role`); servers and their clients are separate processes talking over real TCP sockets on loopback. CPU is the measured process's, from getrusage (every thread: the timers' goroutines, the garbage collector and the network code are all counted). The variants of a scenario take turns within each round, the order rotating each round; tables show the median of the rounds and, in small print, the lowest and highest. A ratio (×) is taken round by round, each variant against the standard-library variant's run in the same round, and the table shows the median of those ratios, their range in small print, and *even* when they do not all fall on the same side of 1 (or the median is within 5%% of 1); scenarios.json holds every round's ratio. The timer share comes from a CPU profile of the measured process over the same window (%d Hz): the samples whose stack, read from the leaf, reaches timer code (this library, the runtime's timers and `time`, deadline contexts, the heap, the variant's own timer code) before a connection's own write or close.\n\n", profileHz)
	fmt.Fprintf(&b, "**Machine.** %s, %d cores (GOMAXPROCS %d), %s, %s, file limit %d. Run %s", m.CPU, m.Cores, m.GOMAXPROCS, m.Go, m.OSArch, m.FileLimit, m.Date)
	if m.Commit != "" {
		fmt.Fprintf(&b, " at commit %s", m.Commit)
	}
	fmt.Fprintf(&b, "; it took %.0f minutes. The 1-minute load average was %s when it started, between %.2f and %.2f before each run (its own processes included), and %s at the end", m.Seconds/60, m.LoadStart, m.LoadMin, m.LoadMax, m.LoadEnd)
	if l := m.LoadStart; l != "unknown" && !strings.HasPrefix(l, "0.") {
		b.WriteString("; the machine is shared, so other programs ran too")
	}
	fmt.Fprintf(&b, ". %d rounds; the wheel's tick is %v (the library's default is 100ms; 10ms suits idle limits of a second).\n\n", p.Rounds, p.Tick)
	fmt.Fprintf(&b, "Command: `%s`", m.Command)
	if m.Quick {
		b.WriteString(" (**quick mode: tiny sizes, the figures mean nothing**)")
	}
	b.WriteString("\n\n")

	b.WriteString("## What this means for you\n\n")
	b.WriteString(rep.summary())
	b.WriteString("\n")

	if sc := rep.scenario("sessions"); sc != nil {
		rep.sessionsSection(&b, sc)
	}
	for _, r := range []regime{regimeBusy, regimeIdle} {
		if sc := rep.scenario("eventloop-" + string(r)); sc != nil {
			rep.eventLoopSection(&b, sc, r)
		}
	}
	if rep.scenario("eventloop-busy") != nil || rep.scenario("eventloop-idle") != nil {
		fmt.Fprintf(&b, "![Event loop: server CPU, and the timers' share of it](%s)\n\n", eventLoopChart)
	}
	if sc := rep.scenario("goroutine"); sc != nil {
		rep.goroutineSection(&b, sc)
	}
	if sc := rep.scenario("http"); sc != nil {
		rep.httpSection(&b, sc)
	}
	if sc := rep.scenario("rpc"); sc != nil {
		rep.rpcSection(&b, sc)
	}
	if rep.scenario("http") != nil || rep.scenario("rpc") != nil {
		fmt.Fprintf(&b, "![Request deadlines: CPU per request, server and client](%s)\n\n", deadlinesChart)
	}
	if sc := rep.scenario("sizeclass"); sc != nil {
		rep.sizeClassSection(&b, sc)
	}
	rep.checksSection(&b)
	return b.String()
}

func (rep *Report) apis(b *strings.Builder, sc *scenario) {
	for _, v := range sc.Variants {
		fmt.Fprintf(b, "- **%s**: %s\n", v.Label, v.API)
	}
	b.WriteString("\n")
}

func (rep *Report) sessionsSection(b *strings.Builder, sc *scenario) {
	p := rep.Params
	fmt.Fprintf(b, "## Sessions: heartbeats and idle deadlines in memory\n\n")
	fmt.Fprintf(b, "N sessions in one process, as a chat, game or MQTT broker keeps them. Each has a heartbeat every %v (it counts itself; one session in %d records its intervals) and an idle deadline of %v. A goroutine of its own re-arms every active session's idle deadline once per %v (the activity rate), in slices every 10ms; one session in %d is silent, so its deadline ends it. The sessions are made over one period, so their heartbeats spread. After a %v warm-up, live memory is read after a full GC; then phase A (%v, heartbeats only: the activity pauses) gives the CPU per heartbeat, and phase B (%v, heartbeats and activity) the cores used and the CPU per re-arm, measured twice: on the re-arming goroutine's own thread (the calls themselves, `CLOCK_THREAD_CPUTIME_ID`) and as phase B's process CPU beyond phase A's (the calls plus the work they leave to the timers' goroutines). Variants:\n\n",
		dur(p.Period), max(1, slices.Max(p.Sessions)/2000), dur(p.IdleLimit), dur(p.Activity), p.SilentSessions, dur(p.SessWarmup), dur(p.SessWindow), dur(p.SessWindow))
	rep.apis(b, sc)
	fmt.Fprintf(b, "Reproduce: %s\n\n", rep.reproduce(sc.Name))
	b.WriteString("CPU:\n\n")
	rep.table(b, sc, []col{
		{title: "cores used", metric: "cores", prec: 3, spread: true},
		{title: "× AfterFunc", metric: "cores", ratio: true},
		{title: "cores, heartbeats only", metric: "cores_hb", prec: 3, spread: true},
		{title: "CPU ns per heartbeat", metric: "cpu_ns_beat", spread: true, perOp: true},
		{title: "× AfterFunc", metric: "cpu_ns_beat", ratio: true, perOp: true},
		{title: "CPU ns per re-arm, caller", metric: "rearm_ns_caller", spread: true, perOp: true},
		{title: "× AfterFunc", metric: "rearm_ns_caller", ratio: true, perOp: true},
		{title: "CPU ns per re-arm, process", metric: "rearm_ns_process", spread: true, perOp: true},
		{title: "allocs per re-arm", metric: "rearm_allocs", prec: 2, perOp: true},
		{title: "heartbeats/s", metric: "beats_per_s"},
		{title: "re-arms/s", metric: "rearms_per_s"},
	})
	b.WriteString("\nMemory and timing (period: the interval between a session's heartbeats; idle lateness: how long after its deadline a silent session's expiry ran; early expiries fail the run):\n\n")
	rep.table(b, sc, []col{
		{title: "B per session", metric: "mem_per_session", spread: true},
		{title: "× AfterFunc", metric: "mem_per_session", ratio: true},
		{title: "of it heap", metric: "heap_per_sess"},
		{title: "goroutines", metric: "goroutines"},
		{title: "alive at the end", metric: "alive_end"},
		{title: "period mean ms", metric: "period_mean_ms", prec: 2},
		{title: "period p99 ms", metric: "period_p99_ms", prec: 2},
		{title: "idle late p50 ms", metric: "idle_late_p50_ms", prec: 2},
		{title: "p99 ms", metric: "idle_late_p99_ms", prec: 2},
		{title: "max ms", metric: "idle_late_max_ms", prec: 2},
		{title: "GCs in A+B", metric: "gcs"},
	})
	b.WriteString("\nB per session is the live heap plus goroutine stacks after a full GC, less the same before the sessions were made, over N: the session, its timers, their closures, and (goroutine+Ticker) the goroutine's stack; with time.AfterFunc, also the goroutines its callbacks ran on while they queued (Go keeps a goroutine's descriptor once it has made one). Alive at the end: the sessions not expired when phase B ended (the silent ones expire during it).\n\n")
	b.WriteString("A variant is *overloaded* in a round when it ran fewer than 95% of the heartbeats due in phase A or of the re-arms due in phase B: it could not keep up on this machine, its callbacks queued, and active sessions expired for want of their re-arm. Its costs per operation are then left out; cores used is what it took while falling behind.\n\n")
	fmt.Fprintf(b, "![Sessions: cores used against the number of sessions](%s)\n\n", sessionsChart)
}

func (rep *Report) eventLoopSection(b *strings.Builder, sc *scenario, r regime) {
	p := rep.Params
	conns := p.BusyConns
	if c := rep.conns(sc, sc.base()); c > 0 {
		conns = int(c)
	}
	switch r {
	case regimeBusy:
		fmt.Fprintf(b, "## Event loop, busy: gnet\n\n")
		fmt.Fprintf(b, "A [gnet](https://github.com/panjf2000/gnet) v2 echo server (one event loop per core) closes a connection that sent nothing for T = %v (a kick) and writes a ping to one it has written nothing to for T/2. Its %s clients run in another process, a goroutine per connection: each declares its keep-alive in its first message; an active one sends a message every T/4 = %v; one in %d is silent after its first message, gets kicked, and reconnects at once. After the clients connected and a %v warm-up, the server is measured over %v.\n\n",
			dur(p.BusyLimit), num(float64(conns), 0), dur(p.BusyLimit/4), p.BusySilent, dur(p.BusyWarmup), dur(p.BusyWindow))
	case regimeIdle:
		fmt.Fprintf(b, "## Event loop, mostly idle: gnet\n\n")
		fmt.Fprintf(b, "The same server and clients, in the regime of push, chat and MQTT servers: as many connections as one process may open here (%s: the file limit is %d per process, and the server and the client process each hold one end of every connection). Each client declares its keep-alive in its first message, as MQTT clients do, and the server closes it after 1.5× that without a message. Active clients declare %v and send a message every %v to %v (uniformly); one in %d declares %v and is silent (kicked %v after its first message, then it reconnects). The server pings every connection it has written nothing to for %v. Pings and kicks are most of the work. After the clients connected and a %v warm-up, the server is measured over %v.\n\n",
			num(float64(conns), 0), rep.Meta.FileLimit, dur(p.IdleActiveKeepAlive), dur(p.IdleSendMin), dur(p.IdleSendMax), p.IdleSilent, dur(p.IdleSilentKeepAlive), dur(3*p.IdleSilentKeepAlive/2), dur(p.IdlePing), dur(p.IdleWarmup), dur(p.IdleWindow))
	}
	b.WriteString("Variants (all read, echo and take `time.Now()` for the checks alike in `OnTraffic`; gnet's `OnTick` runs on a goroutine of its own, not on an event loop):\n\n")
	rep.apis(b, sc)
	fmt.Fprintf(b, "Reproduce: %s\n\n", rep.reproduce(sc.Name))
	rep.table(b, sc, []col{
		{title: "server cores", metric: "cores", prec: 3, spread: true},
		{title: "× AfterFunc", metric: "cores", ratio: true},
		{title: "CPU µs per message", metric: "cpu_us_msg", prec: 2, spread: true},
		{title: "× AfterFunc", metric: "cpu_us_msg", ratio: true},
		{title: "timer share %", metric: "timer_share", scale: 100, prec: 1, spread: true},
		{title: "heap B per conn", metric: "heap_per_conn", spread: true},
		{title: "× AfterFunc", metric: "heap_per_conn", ratio: true},
		{title: "messages/s", metric: "msgs_per_s"},
		{title: "pings/s", metric: "pings_per_s"},
		{title: "kicks/s", metric: "kicks_per_s"},
	})
	fmt.Fprintf(b, "\nKicks and checks. Kick lateness: the time from a kicked connection's last message, as the server read it, to its close on the loop, less its limit, over the window; more than one tick (%v) late misses the target. Early kicks (server) and early closes (client: less than the limit after the last message the server echoed) fail the run. A raced kick is one whose deadline had run when a last message was read (its Reset failed): the client had waited its whole limit. An active connection the server closed counts as stalled when its client had gone its whole limit without a message (this machine did not run the client process for that long); any other fails the run.\n\n", p.Tick)
	rep.table(b, sc, []col{
		{title: "conns", metric: "conns"},
		{title: "kick late p50 ms", metric: "kick_late_p50_ms", prec: 2},
		{title: "p99 ms", metric: "kick_late_p99_ms", prec: 2},
		{title: "max ms", metric: "kick_late_max_ms", prec: 2, spread: true},
		{title: "kicks > 1 tick late", metric: "kicks_over_tick", spread: true},
		{title: "kicks", metric: "kick_late_n"},
		{title: "early kicks", metric: "early_kicks"},
		{title: "raced kicks", metric: "raced_kicks"},
		{title: "active closed (client)", metric: "client_active_closed"},
		{title: "of them stalled", metric: "client_active_stalled"},
		{title: "early closes (client)", metric: "client_early_closes"},
		{title: "client cores", metric: "client_cores", prec: 3},
		{title: "GCs", metric: "gcs"},
	})
	b.WriteString("\n")
}

func (rep *Report) goroutineSection(b *strings.Builder, sc *scenario) {
	p := rep.Params
	fmt.Fprintf(b, "## Goroutine per connection: a TCP server closing idle connections\n\n")
	fmt.Fprintf(b, "The idle server most Go programs are: a goroutine per connection reads, echoes and closes connections idle for %v. The clients are the busy event loop's (%s connections in another process, messages every %v, one in %d silent and reconnecting), with no pings. Measured over %v after a %v warm-up. Variants:\n\n",
		dur(p.GrLimit), num(float64(p.GrConns), 0), dur(p.GrLimit/4), p.GrSilent, dur(p.GrWindow), dur(p.GrWarmup))
	rep.apis(b, sc)
	fmt.Fprintf(b, "Reproduce: %s\n\n", rep.reproduce(sc.Name))
	rep.table(b, sc, []col{
		{title: "server cores", metric: "cores", prec: 3, spread: true},
		{title: "CPU µs per message", metric: "cpu_us_msg", prec: 2, spread: true},
		{title: "× SetReadDeadline", metric: "cpu_us_msg", ratio: true},
		{title: "timer share %", metric: "timer_share", scale: 100, prec: 1, spread: true},
		{title: "B per conn (heap+stack)", metric: "mem_per_conn", spread: true},
		{title: "of it heap", metric: "heap_per_conn"},
		{title: "messages/s", metric: "msgs_per_s"},
		{title: "kick late p50 ms", metric: "kick_late_p50_ms", prec: 2},
		{title: "p99 ms", metric: "kick_late_p99_ms", prec: 2},
		{title: "early kicks", metric: "early_kicks"},
		{title: "raced kicks", metric: "raced_kicks"},
		{title: "active closed", metric: "client_active_closed"},
		{title: "of them stalled", metric: "client_active_stalled"},
	})
	b.WriteString("\nThe read and the write dominate here, and the read deadline lives in the runtime's poller already, which arms it without an extra goroutine or callback.\n\n")
}

func (rep *Report) httpSection(b *strings.Builder, sc *scenario) {
	p := rep.Params
	fmt.Fprintf(b, "## Request deadlines, server: net/http\n\n")
	fmt.Fprintf(b, "A net/http server whose handler derives a %v deadline from `r.Context()`, reads `Done` (a select with a default case, as a call that honours the context does) and answers 3 bytes. Its client, in another process, sends %s requests per second over %d keep-alive connections (each pipelines its share every 5ms), so every variant serves the same load. The server is measured over %v after a %v warm-up. The deadline's share is given twice: from the profile (the server's own read deadlines, which net/http sets on every request, count as timer code in every variant), and as the CPU per request beyond the variant with no deadline. Variants:\n\n",
		dur(p.HTTPDeadline), num(float64(p.HTTPRate), 0), p.HTTPConns, dur(p.HTTPWindow), dur(p.HTTPWarmup))
	rep.apis(b, sc)
	fmt.Fprintf(b, "Reproduce: %s\n\n", rep.reproduce(sc.Name))
	rep.table(b, sc, []col{
		{title: "server CPU µs per request", metric: "cpu_us_req", prec: 2, spread: true},
		{title: "× context.WithTimeout", metric: "cpu_us_req", ratio: true},
		{title: "allocs per request", metric: "allocs_req", prec: 1, spread: true},
		{title: "timer share %", metric: "timer_share", scale: 100, prec: 1, spread: true},
		{title: "requests/s", metric: "reqs_per_s"},
		{title: "server cores", metric: "cores", prec: 3, spread: true},
	})
	rep.beyondNone(b, sc, "cpu_us_req", 1000)
}

func (rep *Report) rpcSection(b *strings.Builder, sc *scenario) {
	p := rep.Params
	fmt.Fprintf(b, "## Request deadlines, client: pipelined requests\n\n")
	fmt.Fprintf(b, "A client sends %s requests per second over one TCP connection to a server in another process that answers each %v after it came, so that %s are in flight, as when a Redis or memcached client pipelines to a busy server. A writer goroutine arms each request's %v deadline and writes it (16 bytes; the requests due every millisecond, then a flush), a reader goroutine takes the answers in order and releases their deadlines. The client process is measured over %v after a %v warm-up; no deadline ever runs. Variants:\n\n",
		num(float64(p.RPCRate), 0), time.Duration(float64(time.Second)*float64(p.RPCInFlight)/float64(p.RPCRate)), num(float64(p.RPCInFlight), 0), dur(p.RPCDeadline), dur(p.RPCWindow), dur(p.RPCWarmup))
	rep.apis(b, sc)
	fmt.Fprintf(b, "Reproduce: %s\n\n", rep.reproduce(sc.Name))
	rep.table(b, sc, []col{
		{title: "client CPU ns per request", metric: "cpu_ns_req", spread: true},
		{title: "× AfterFunc", metric: "cpu_ns_req", ratio: true},
		{title: "allocs per request", metric: "allocs_req", prec: 2, spread: true},
		{title: "timer share %", metric: "timer_share", scale: 100, prec: 1, spread: true},
		{title: "requests/s", metric: "reqs_per_s"},
		{title: "in flight", metric: "in_flight"},
		{title: "client cores", metric: "cores", prec: 3, spread: true},
		{title: "deadlines run", metric: "expired"},
	})
	rep.beyondNone(b, sc, "cpu_ns_req", 1)
}

// beyondNone writes each variant's CPU per request beyond the variant with
// no deadline, in ns, and as a share of its own.
func (rep *Report) beyondNone(b *strings.Builder, sc *scenario, metric string, toNs float64) {
	none, ok := rep.value(sc.Name, 0, "none", metric)
	if !ok {
		b.WriteString("\n")
		return
	}
	var parts []string
	for _, v := range sc.Variants {
		if v.ID == "none" {
			continue
		}
		x, ok := rep.value(sc.Name, 0, v.ID, metric)
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s ns (%s%%)", v.Label, num((x-none)*toNs, 0), num(100*(x-none)/x, 1)))
	}
	fmt.Fprintf(b, "\nCPU per request beyond no deadline (the deadline's share of the program's CPU by difference; within the noise where it is small or negative): %s.\n\n", strings.Join(parts, "; "))
}

func (rep *Report) checksSection(b *strings.Builder) {
	b.WriteString("## Hard checks\n\n")
	b.WriteString("Every run checks: no idle deadline or kick early (before its limit after the last message, seen by the server and by the clients), no active session expired (unless the variant was overloaded), no active connection closed (unless its client went its whole limit without a message), every silent session expired. A failed check fails the command.\n\n")
	var lines []string
	for _, r := range rep.Results {
		sc := rep.scenario(r.Scenario)
		name := r.Scenario
		if c := caseName(r.Scenario, r.Case); c != "" {
			name += " " + c
		}
		label := r.Variant
		if sc != nil {
			label = sc.label(r.Variant)
		}
		for _, v := range r.Violations {
			lines = append(lines, fmt.Sprintf("- FAILED: %s, %s, %s", name, label, v))
		}
		for _, e := range r.Errors {
			lines = append(lines, fmt.Sprintf("- run failed: %s, %s, %s", name, label, e))
		}
	}
	if len(lines) == 0 {
		b.WriteString("All passed in every round.\n")
		return
	}
	b.WriteString(strings.Join(lines, "\n") + "\n")
}
