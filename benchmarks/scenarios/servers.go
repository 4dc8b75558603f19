package main

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// What the scenarios with a server and a client process share (eventloop,
// goroutine and http), and what the two servers that close idle
// connections share (eventloop and goroutine): their clients are
// idleclient.go's, which declare their keep-alive in their first message.

// serverAndClient is one run of a server process, which the driver
// measures, and a client process, which loads it.
type serverAndClient struct {
	server     string // the server's role
	serverSpec any
	client     string // the client's role
	// clientSpec returns the client's spec, given the server's address.
	clientSpec func(addr string) any
	// connect and report are how long the client may take to say it is
	// ready, and to answer "end".
	connect, report time.Duration
	warmup, window  time.Duration
}

// run starts the server, then the client once the server says where it
// listens; measures the server over the window after the warm-up; and
// returns both sides' outcomes once both have exited. The server's metrics
// hold the client's too, their names prefixed with "client_".
func (r serverAndClient) run() (server, client outcome, err error) {
	srv, err := startChild(r.server, r.serverSpec)
	if err != nil {
		return outcome{}, outcome{}, err
	}
	var cl *child
	fail := func(err error) (outcome, outcome, error) {
		cl.kill()
		srv.kill()
		return outcome{}, outcome{}, err
	}
	addr, err := srv.expectPrefix("ready ", 30*time.Second)
	if err != nil {
		return fail(err)
	}
	if cl, err = startChild(r.client, r.clientSpec(addr)); err != nil {
		return fail(err)
	}
	if _, err := cl.expectPrefix("ready", r.connect); err != nil {
		return fail(err)
	}
	time.Sleep(r.warmup)
	if _, err := srv.expectPrefixAfter("begin", "ok", 30*time.Second); err != nil {
		return fail(err)
	}
	time.Sleep(r.window)
	if err := srv.ask("end", 30*time.Second, &server); err != nil {
		return fail(err)
	}
	if err := cl.ask("end", r.report, &client); err != nil {
		return fail(err)
	}
	if err := cl.finish(30 * time.Second); err != nil {
		return fail(err)
	}
	if err := srv.finish(30 * time.Second); err != nil {
		return outcome{}, outcome{}, err
	}
	for k, v := range client.Metrics {
		server.Metrics["client_"+k] = v
	}
	return server, client, nil
}

// runServerAndClients runs a server process and a process of idle clients,
// measures the server over win after warm, and checks both sides' figures.
func runServerAndClients(serverRole string, ss any, cs clientSpec, warm, win time.Duration) (outcome, error) {
	so, co, err := serverAndClient{
		server: serverRole, serverSpec: ss,
		client: "idle-client", clientSpec: func(addr string) any { cs.Addr = addr; return cs },
		// Connecting 20,000 clients takes a few seconds.
		connect: time.Minute + time.Duration(cs.Conns)*time.Millisecond, report: time.Minute,
		warmup: warm, window: win,
	}.run()
	if err != nil {
		return outcome{}, err
	}
	o := so
	// A client sees an early close when the server kicked it less than the
	// limit after the last message the server echoed. The server's own check
	// is exact; the client's can also see a raced kick so (a last message
	// the server read only after its deadline had run, having sat in the
	// socket while the server was busy). So the client's early closes fail
	// the run only beyond the server's raced kicks.
	if early, raced := co.Metrics["early_closes"], so.Metrics["raced_kicks"]; early > raced {
		o.Violations = append(o.Violations, fmt.Sprintf("client: %.0f connections were closed early, %.0f kicks raced a message", early, raced))
		o.Violations = append(o.Violations, co.Violations...)
	}
	// Silent clients are kicked and reconnect all the time, so some are
	// always between two connections.
	if c := so.Metrics["conns"]; c < float64(cs.Conns)*0.9 {
		o.Violations = append(o.Violations, fmt.Sprintf("the server held %.0f connections at the start of the window, of %d", c, cs.Conns))
	}
	return o, nil
}

// parseHello reads a client's first message, "K <keep-alive in ns>".
func parseHello(line []byte) (int64, error) {
	rest, ok := bytes.CutPrefix(line, []byte("K "))
	if !ok {
		return 0, fmt.Errorf("first message %q: want K <ns>", line)
	}
	ka, err := strconv.ParseInt(string(rest), 10, 64)
	if err != nil || ka <= 0 {
		return 0, fmt.Errorf("first message %q: want K <ns>", line)
	}
	return ka, nil
}

// kickLog is what a server records of its kicks, the closes of connections
// silent for their limit: the server embeds it.
type kickLog struct {
	measuring  atomic.Bool  // set over the driver's window
	earlyKicks atomic.Int64 // before the limit, over the whole run: none should be
	racedKicks atomic.Int64 // that a last message raced, over the whole run: see the servers

	lateMu sync.Mutex
	late   []float64 // ms after the limit, of kicks while measuring
}

// recordKick records a kick late ns after its connection's limit.
func (k *kickLog) recordKick(late int64) {
	if late < 0 {
		k.earlyKicks.Add(1)
	}
	if k.measuring.Load() {
		k.lateMu.Lock()
		k.late = append(k.late, measure.Millis(time.Duration(late)))
		k.lateMu.Unlock()
	}
}

// connWindow is what a server that closes idle connections counted over
// the driver's window.
type connWindow struct {
	*profiledWindow
	conns        int64  // open at the start of the window
	heap0, heap1 uint64 // live heap before the clients connected, and at the start of the window
	msgs, kicks  int64  // read and made in the window
}

// outcome returns the server's figures and hard checks: its CPU, memory
// and timer share over the window, and its kicks' lateness (more than one
// tick late misses the target; any early fails the run).
func (w connWindow) outcome(k *kickLog, tick time.Duration) outcome {
	m := map[string]float64{
		"conns":         float64(w.conns),
		"heap_per_conn": (float64(w.heap1) - float64(w.heap0)) / float64(max(w.conns, 1)),
		"cores":         w.Cores(),
		"cpu_us_msg":    nsPer(w.CPU, w.msgs) / 1e3,
		"allocs_msg":    float64(w.Mallocs) / float64(max(w.msgs, 1)),
		"msgs_per_s":    float64(w.msgs) / w.Wall.Seconds(),
		"kicks_per_s":   float64(w.kicks) / w.Wall.Seconds(),
		"goroutines":    float64(runtime.NumGoroutine()),
		"gcs":           float64(w.GCs),
	}
	w.addProfile(m)
	k.lateMu.Lock()
	late := k.late
	k.lateMu.Unlock()
	latenessFigures(m, "kick_late", late)
	over := 0
	for _, l := range late {
		if l > measure.Millis(tick) {
			over++
		}
	}
	m["kicks_over_tick"] = float64(over)
	o := outcome{Metrics: m}
	if e := k.earlyKicks.Load(); e > 0 {
		o.Violations = append(o.Violations, fmt.Sprintf("server: %d connections were kicked before their limit", e))
	}
	m["early_kicks"] = float64(k.earlyKicks.Load())
	m["raced_kicks"] = float64(k.racedKicks.Load())
	return o
}
