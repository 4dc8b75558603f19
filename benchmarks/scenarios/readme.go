package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/report"
)

// The README's scenario table sits between these markers; -readme rewrites
// it.
const (
	readmeBegin = "<!-- scenarios summary: begin (written by benchmarks/scenarios, do not edit) -->"
	readmeEnd   = "<!-- scenarios summary: end -->"
)

// readmeRow is one row of the README's table: the wheel variant a against
// b on one figure of one case of a scenario.
type readmeRow struct {
	job, instead, measured string
	scenario               string
	c                      int
	a, b, metric           string
}

// readmeRows are the rows the run has, in the README's order. The variants
// are fixed, not the cheapest of the run: in the event loops, the wheel
// driven by the loop with one timeout per connection, as the README shows
// (the one in the connection, re-armed with Schedule, if the run has it).
func (rep *Report) readmeRows() []readmeRow {
	p := rep.Params
	var rows []readmeRow
	if sc := rep.scenario("sessions"); sc != nil {
		n := slices.Max(sc.Cases)
		if slices.Contains(sc.Cases, 100_000) {
			n = 100_000
		}
		job := fmt.Sprintf("%s in-memory sessions: a heartbeat each every %v, an idle deadline re-armed every %v", num(float64(n), 0), dur(p.Period), dur(p.Activity))
		const instead = "`time.AfterFunc` re-armed, `time.Timer.Reset`"
		rows = append(rows,
			readmeRow{job, instead, "process CPU per heartbeat", "sessions", n, "wheel", "afterfunc", "cpu_ns_beat"},
			readmeRow{"the same", "the same", "process CPU, heartbeats and re-arms (cores)", "sessions", n, "wheel", "afterfunc", "cores"},
			readmeRow{"the same", "the same", "the caller's CPU per re-arm (`Timeout.Reset`)", "sessions", n, "wheel", "afterfunc", "rearm_ns_caller"},
			readmeRow{"the same", "the same", "live heap and stacks per session after a GC, counting the goroutines `time.AfterFunc` callbacks left while they queued", "sessions", n, "wheel", "afterfunc", "mem_per_session"},
		)
		if rep.get("sessions", n, "wheel-schedule") != nil {
			const measured = "one `Timeout` in each session, re-armed by its own task (`Timer.ScheduleAt`): "
			rows = append(rows,
				readmeRow{"the same", "the same", measured + "process CPU per heartbeat", "sessions", n, "wheel-schedule", "afterfunc", "cpu_ns_beat"},
				readmeRow{"the same", "the same", measured + "live heap and stacks per session", "sessions", n, "wheel-schedule", "afterfunc", "mem_per_session"},
			)
		}
		if m := slices.Max(sc.Cases); m != n {
			rows = append(rows, readmeRow{fmt.Sprintf("the same, %s sessions", num(float64(m), 0)), "`time.AfterFunc` re-armed", "process CPU (cores)", "sessions", m, "wheel", "afterfunc", "cores"})
		}
	}
	if sc := rep.scenario("rpc"); sc != nil {
		job := fmt.Sprintf("a client with %s requests in flight on one connection, %s requests/s, a %v deadline each", num(float64(p.RPCInFlight), 0), num(float64(p.RPCRate), 0), dur(p.RPCDeadline))
		rows = append(rows,
			readmeRow{job, "`context.WithTimeout`", "client CPU per request (`Timer.WithTimeout`)", "rpc", 0, "wheelctx", "context", "cpu_ns_req"},
			readmeRow{"the same", "`time.AfterFunc`+`Stop`", "client CPU per request (`NewTimeout`+`Cancel`)", "rpc", 0, "wheel", "afterfunc", "cpu_ns_req"},
		)
	}
	loopWheel := func(scenario string) string {
		if rep.get(scenario, 0, "wheel-schedule") != nil {
			return "wheel-schedule"
		}
		return "wheel-lazy"
	}
	if sc := rep.scenario("eventloop-idle"); sc != nil {
		conns := rep.conns(sc, sc.base())
		job := fmt.Sprintf("gnet server, %s mostly idle connections, pinged after %v quiet, closed when silent", num(conns, 0), dur(p.IdlePing))
		rows = append(rows,
			readmeRow{job, "a min-heap swept in `OnTick`", "server CPU (cores); the wheel driven by the loop, one timeout per connection", "eventloop-idle", 0, loopWheel("eventloop-idle"), "heap", "cores"},
			readmeRow{"the same", "`time.AfterFunc` per connection", "server CPU (cores)", "eventloop-idle", 0, loopWheel("eventloop-idle"), "afterfunc", "cores"},
		)
	}
	if sc := rep.scenario("eventloop-busy"); sc != nil {
		conns := rep.conns(sc, sc.base())
		job := fmt.Sprintf("gnet server, %s busy connections, a message each every %v", num(conns, 0), dur(p.BusyLimit/4))
		rows = append(rows,
			readmeRow{job, "a min-heap swept in `OnTick`", "server CPU per message; the wheel as above", "eventloop-busy", 0, loopWheel("eventloop-busy"), "heap", "cpu_us_msg"},
			readmeRow{"the same", "`time.AfterFunc` per connection", "server CPU per message", "eventloop-busy", 0, loopWheel("eventloop-busy"), "afterfunc", "cpu_us_msg"},
		)
	}
	if rep.scenario("goroutine") != nil {
		job := fmt.Sprintf("a goroutine per connection (%s), closing those silent for %v", num(float64(p.GrConns), 0), dur(p.GrLimit))
		rows = append(rows, readmeRow{job, "`conn.SetReadDeadline`", "server CPU per message (`Timeout.Reset`)", "goroutine", 0, "wheel", "deadline", "cpu_us_msg"})
	}
	if rep.scenario("http") != nil {
		job := fmt.Sprintf("a `net/http` handler's %v deadline, %s requests/s", dur(p.HTTPDeadline), num(float64(p.HTTPRate), 0))
		rows = append(rows, readmeRow{job, "`context.WithTimeout`", "server CPU per request (`Timer.WithTimeout`)", "http", 0, "wheel", "context", "cpu_us_req"})
	}
	return rows
}

// readmeTable is the README's scenario table and the lines under it.
func (rep *Report) readmeTable() string {
	var b strings.Builder
	b.WriteString("| job | instead of | measured (less is better) | the wheel ÷ the other: median [range] over the rounds | verdict |\n")
	b.WriteString("|---|---|---|--:|---|\n")
	for _, row := range rep.readmeRows() {
		ratio, verdict := "–", "–"
		if q, ok := rep.ratio(row.scenario, row.c, row.a, row.b, row.metric); ok {
			ratio = q.String()
			if n := len(q.Values); n < len(rep.get(row.scenario, row.c, row.b).Reps) {
				ratio += fmt.Sprintf(", %d rounds", n)
			}
			c := comparison{q: q, verdict: q.Verdict}
			verdict = c.word()
			switch q.Verdict {
			case "less":
				verdict = "**the wheel costs less**"
			case "more":
				verdict = "**the wheel costs more**"
			}
		} else if r := rep.get(row.scenario, row.c, row.b); r != nil && r.roundsWith("overloaded") > 0 {
			// The other fell behind: it has no cost to compare.
			w, _ := rep.value(row.scenario, row.c, row.a, row.metric)
			ratio = fmt.Sprintf("the wheel alone: %s", num(w, 3))
			verdict = fmt.Sprintf("%s fell behind in %d of %d rounds", strings.SplitN(row.instead, " ", 2)[0], r.roundsWith("overloaded"), len(r.Reps))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.job, row.instead, row.measured, ratio, verdict)
	}
	m, p := rep.Meta, rep.Params
	fmt.Fprintf(&b, "\nRatios are paired within a round (the variants take turns, each a fresh process); a verdict needs %d rounds on one side of 1 and the median %.0f%% from it, else *even* ([how](docs/scenarios.md)). %d rounds, %s on %d cores (%s), %s; `%s -readme ../README.md`.",
		minVerdictRounds, 100*evenWithin, p.Rounds, m.Date, m.Cores, m.CPU, m.Go, m.Command)
	if m.Quick {
		b.WriteString(" **Quick mode: tiny sizes, the figures mean nothing.**")
	}
	if p.Rounds < minVerdictRounds {
		fmt.Fprintf(&b, " This run had %d rounds, fewer than a verdict needs: its figures are to be measured again with the default %d.", p.Rounds, minVerdictRounds)
	}
	b.WriteString("\n")
	return b.String()
}

// updateReadme replaces the table between the markers in the README at path.
func (rep *Report) updateReadme(path string) error {
	return report.ReplaceBetween(path, readmeBegin, readmeEnd, rep.readmeTable())
}
