// Command scenarios measures hashedwheel on the three jobs it exists for,
// against the standard library, in programs shaped like a user's, and writes
// the figures, the tables and the charts under an output directory:
//
//	cd benchmarks && go run ./scenarios                 # about 45 minutes on 2 cores
//	cd benchmarks && go run ./scenarios -quick -out "$(mktemp -d)"  # tiny sizes, about two minutes
//
// The scenarios:
//
//   - sessions: N in-memory sessions, each with a heartbeat and an idle
//     deadline re-armed on activity (Timer.Every and Timeout.Reset, or one
//     Timeout in each session re-armed by its own task with Timer.ScheduleAt,
//     against time.AfterFunc and Reset, and a time.Ticker and a goroutine
//     per session);
//   - eventloop-busy and eventloop-idle: a github.com/panjf2000/gnet/v2 echo
//     server that closes idle connections and pings quiet ones, with its
//     clients in another process (the wheel, the min-heap gnet's maintainer
//     suggests, time.AfterFunc per connection);
//   - goroutine: a TCP server with a goroutine per connection closing idle
//     ones (SetReadDeadline, time.AfterFunc with Reset, Timeout.Reset);
//   - http: a net/http handler deriving its deadline from r.Context()
//     (context.WithTimeout against Timer.WithTimeout);
//   - rpc: a client with 1e4 pipelined requests in flight over one
//     connection, each with its own deadline;
//   - sizeclass: the live heap of sessions whose struct is just under a
//     size class, with a Timeout embedded, by pointer, or a time.AfterFunc
//     (bytes only: it needs no quiet machine).
//
// Every variant of every scenario runs in processes of its own (this command
// again, with -role); the variants of a scenario take turns within each of
// -rounds rounds (5 by default), the order turning each round. A ratio
// between two variants is taken round by round, each variant against the
// other's run in the same round, and the tables show the median of those
// ratios with their range; a difference is a win or a cost only when every
// round's ratio is on the same side of 1 (see minVerdictRounds), and even
// otherwise. CPU is the whole process's, from getrusage. It runs on Linux.
//
// With -readme ../README.md the command also rewrites the README's scenario
// table, between its markers, and with -section ../docs/performance.md the
// sections of that file that a scenario of the run writes (sizeclass's
// table), between theirs; -render docs/scenarios.json does the same from a
// run's JSON without running anything.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	quick := slices.ContainsFunc(os.Args[1:], func(a string) bool {
		return a == "-quick" || a == "--quick" || a == "-quick=true" || a == "--quick=true"
	})
	p := fullParams()
	if quick {
		p = quickParams()
	}
	var (
		out    = flag.String("out", "../docs", "directory to write scenarios.md, scenarios.json and the charts to")
		run    = flag.String("run", "", "comma-separated scenarios to run (default all): "+strings.Join(scenarioNames(), ", "))
		only   = flag.String("variants", "", "comma-separated variants to run (default all of each scenario)")
		render = flag.String("render", "", "write the tables and charts of an existing scenarios.json again, without running anything")
		readme = flag.String("readme", "", "a README whose scenario table, between its markers, to rewrite from the run")
		sect   = flag.String("section", "", "a markdown file whose sections written by the run's scenarios (sizeclass), between their markers, to rewrite from the run")
		role   = flag.String("role", "", "run one process of a scenario (used by the driver): "+strings.Join(roleNames(), ", "))
		spec   = flag.String("spec", "", "the -role process's parameters, as JSON (used by the driver)")
		profs  = flag.String("profiles", "", "a directory to keep the measured processes' CPU profiles in, for go tool pprof")
	)
	flag.Bool("quick", false, "tiny sizes and two rounds, to check that everything runs")
	p.flags(flag.CommandLine)
	flag.Parse()

	if *profs != "" {
		if err := os.MkdirAll(*profs, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "scenarios:", err)
			os.Exit(1)
		}
		os.Setenv(profilesEnv, *profs)
	}
	if *role != "" {
		os.Exit(runRole(*role, *spec))
	}
	if *render != "" {
		if err := rerender(*render, *out, *readme, *sect); err != nil {
			fmt.Fprintln(os.Stderr, "scenarios:", err)
			os.Exit(1)
		}
		return
	}
	if err := p.check(); err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(2)
	}
	var names []string
	if *run != "" {
		names = strings.Split(*run, ",")
	}
	var variants []string
	if *only != "" {
		variants = strings.Split(*only, ",")
	}
	failed, err := drive(*out, *readme, *sect, quick, p, names, variants)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "scenarios: %d hard checks failed; see %s\n", failed, *out)
		os.Exit(1)
	}
}

// params are the sizes of every scenario; -quick picks tiny ones, and every
// field has a flag.
type params struct {
	Rounds int           `json:"rounds"`
	Tick   time.Duration `json:"tick"` // the wheel's tick, and the heap's OnTick period

	Sessions       []int         `json:"sessions"`
	Period         time.Duration `json:"period"`          // heartbeat
	Activity       time.Duration `json:"activity"`        // each active session is re-armed this often
	IdleLimit      time.Duration `json:"idle_limit"`      // a session with no activity for this long expires
	SilentSessions int           `json:"silent_sessions"` // one session in this many is silent
	SessWarmup     time.Duration `json:"sessions_warmup"`
	SessWindow     time.Duration `json:"sessions_window"` // each of the two measured phases

	BusyConns  int           `json:"busy_conns"`
	BusyLimit  time.Duration `json:"busy_limit"`  // T: idle limit; messages every T/4, pings after T/2
	BusySilent int           `json:"busy_silent"` // one connection in this many is silent
	BusyWarmup time.Duration `json:"busy_warmup"`
	BusyWindow time.Duration `json:"busy_window"`

	IdleConns           int           `json:"idle_conns"` // 0: as many as the file limit allows
	IdleSilent          int           `json:"idle_silent"`
	IdleActiveKeepAlive time.Duration `json:"idle_active_keepalive"`
	IdleSilentKeepAlive time.Duration `json:"idle_silent_keepalive"`
	IdleSendMin         time.Duration `json:"idle_send_min"`
	IdleSendMax         time.Duration `json:"idle_send_max"`
	IdlePing            time.Duration `json:"idle_ping"`
	IdleWarmup          time.Duration `json:"idle_warmup"`
	IdleWindow          time.Duration `json:"idle_window"`

	GrConns  int           `json:"goroutine_conns"`
	GrLimit  time.Duration `json:"goroutine_limit"`
	GrSilent int           `json:"goroutine_silent"`
	GrWarmup time.Duration `json:"goroutine_warmup"`
	GrWindow time.Duration `json:"goroutine_window"`

	HTTPConns    int           `json:"http_conns"`
	HTTPRate     int           `json:"http_rate"` // requests per second, over all connections
	HTTPDeadline time.Duration `json:"http_deadline"`
	HTTPWarmup   time.Duration `json:"http_warmup"`
	HTTPWindow   time.Duration `json:"http_window"`

	RPCInFlight int           `json:"rpc_inflight"`
	RPCRate     int           `json:"rpc_rate"` // requests per second; the server answers each after inflight/rate
	RPCDeadline time.Duration `json:"rpc_deadline"`
	RPCWarmup   time.Duration `json:"rpc_warmup"`
	RPCWindow   time.Duration `json:"rpc_window"`

	SizeClassSessions int           `json:"sizeclass_sessions"`
	SizeClassSettle   time.Duration `json:"sizeclass_settle"` // how long the sessions beat before the heap is read
}

func fullParams() params {
	return params{
		Rounds: minVerdictRounds, Tick: 10 * time.Millisecond,

		Sessions: []int{1e4, 1e5, 1e6}, Period: time.Second, Activity: time.Second,
		IdleLimit: 10 * time.Second, SilentSessions: 100,
		SessWarmup: 2 * time.Second, SessWindow: 5 * time.Second,

		BusyConns: 5000, BusyLimit: time.Second, BusySilent: 5,
		BusyWarmup: 3 * time.Second, BusyWindow: 10 * time.Second,

		IdleConns: 0, IdleSilent: 10,
		IdleActiveKeepAlive: 30 * time.Second, IdleSilentKeepAlive: 5 * time.Second,
		IdleSendMin: 10 * time.Second, IdleSendMax: 30 * time.Second, IdlePing: 2500 * time.Millisecond,
		IdleWarmup: 10 * time.Second, IdleWindow: 20 * time.Second,

		GrConns: 4000, GrLimit: time.Second, GrSilent: 5,
		GrWarmup: 3 * time.Second, GrWindow: 10 * time.Second,

		HTTPConns: 32, HTTPRate: 20_000, HTTPDeadline: 5 * time.Second,
		HTTPWarmup: time.Second, HTTPWindow: 5 * time.Second,

		RPCInFlight: 10_000, RPCRate: 200_000, RPCDeadline: 5 * time.Second,
		RPCWarmup: time.Second, RPCWindow: 5 * time.Second,

		SizeClassSessions: 1e5, SizeClassSettle: 3 * time.Second,
	}
}

func quickParams() params {
	return params{
		Rounds: 2, Tick: 10 * time.Millisecond,

		Sessions: []int{1e3, 1e4}, Period: 100 * time.Millisecond, Activity: 100 * time.Millisecond,
		IdleLimit: 1500 * time.Millisecond, SilentSessions: 20,
		SessWarmup: 200 * time.Millisecond, SessWindow: 300 * time.Millisecond,

		// Limits of a second: a check that everything runs must not fail
		// because the machine stalled the clients for a few hundred
		// milliseconds (the check that the server held its connections);
		// the window starts between two kicks of the silent clients.
		BusyConns: 200, BusyLimit: time.Second, BusySilent: 5,
		BusyWarmup: 1500 * time.Millisecond, BusyWindow: time.Second,

		IdleConns: 400, IdleSilent: 10,
		IdleActiveKeepAlive: 3 * time.Second, IdleSilentKeepAlive: 400 * time.Millisecond,
		IdleSendMin: time.Second, IdleSendMax: 2 * time.Second, IdlePing: 200 * time.Millisecond,
		IdleWarmup: 500 * time.Millisecond, IdleWindow: time.Second,

		GrConns: 200, GrLimit: time.Second, GrSilent: 5,
		GrWarmup: 1500 * time.Millisecond, GrWindow: time.Second,

		HTTPConns: 4, HTTPRate: 2000, HTTPDeadline: 5 * time.Second,
		HTTPWarmup: 200 * time.Millisecond, HTTPWindow: 500 * time.Millisecond,

		RPCInFlight: 1000, RPCRate: 20_000, RPCDeadline: 5 * time.Second,
		RPCWarmup: 200 * time.Millisecond, RPCWindow: 500 * time.Millisecond,

		SizeClassSessions: 2000, SizeClassSettle: 300 * time.Millisecond,
	}
}

// flags binds every field of p to a flag, with p's values as defaults.
func (p *params) flags(fs *flag.FlagSet) {
	fs.IntVar(&p.Rounds, "rounds", p.Rounds, "rounds: each variant of each scenario runs once per round, the order turning each round; ratios are taken round by round, and a verdict needs at least 5")
	fs.DurationVar(&p.Tick, "tick", p.Tick, "the wheel's tick duration (and the heap variant's OnTick period)")

	fs.Var((*intList)(&p.Sessions), "sessions", "sessions: the session counts, comma-separated (1e6 or 1000000)")
	fs.DurationVar(&p.Period, "period", p.Period, "sessions: heartbeat period")
	fs.DurationVar(&p.Activity, "activity", p.Activity, "sessions: each active session sees activity (a re-arm of its idle deadline) this often")
	fs.DurationVar(&p.IdleLimit, "idle-limit", p.IdleLimit, "sessions: idle deadline")
	fs.IntVar(&p.SilentSessions, "silent-sessions", p.SilentSessions, "sessions: one session in this many is silent and expires")
	fs.DurationVar(&p.SessWarmup, "sessions-warmup", p.SessWarmup, "sessions: warm-up before the measured phases")
	fs.DurationVar(&p.SessWindow, "sessions-window", p.SessWindow, "sessions: length of each measured phase (heartbeats only, then with activity)")

	fs.IntVar(&p.BusyConns, "busy-conns", p.BusyConns, "eventloop-busy: connections")
	fs.DurationVar(&p.BusyLimit, "busy-limit", p.BusyLimit, "eventloop-busy: idle limit T; active clients send every T/4, the server pings after T/2")
	fs.IntVar(&p.BusySilent, "busy-silent", p.BusySilent, "eventloop-busy: one connection in this many is silent")
	fs.DurationVar(&p.BusyWarmup, "busy-warmup", p.BusyWarmup, "eventloop-busy: warm-up after the clients connected")
	fs.DurationVar(&p.BusyWindow, "busy-window", p.BusyWindow, "eventloop-busy: measured window")

	fs.IntVar(&p.IdleConns, "idle-conns", p.IdleConns, "eventloop-idle: connections (0: as many as the file limit allows)")
	fs.IntVar(&p.IdleSilent, "idle-silent", p.IdleSilent, "eventloop-idle: one connection in this many is silent")
	fs.DurationVar(&p.IdleActiveKeepAlive, "idle-active-keepalive", p.IdleActiveKeepAlive, "eventloop-idle: keep-alive active clients declare (closed after 1.5x without a message)")
	fs.DurationVar(&p.IdleSilentKeepAlive, "idle-silent-keepalive", p.IdleSilentKeepAlive, "eventloop-idle: keep-alive silent clients declare")
	fs.DurationVar(&p.IdleSendMin, "idle-send-min", p.IdleSendMin, "eventloop-idle: shortest gap between an active client's messages")
	fs.DurationVar(&p.IdleSendMax, "idle-send-max", p.IdleSendMax, "eventloop-idle: longest gap between an active client's messages")
	fs.DurationVar(&p.IdlePing, "idle-ping", p.IdlePing, "eventloop-idle: the server pings a connection it has not written to for this long")
	fs.DurationVar(&p.IdleWarmup, "idle-warmup", p.IdleWarmup, "eventloop-idle: warm-up after the clients connected")
	fs.DurationVar(&p.IdleWindow, "idle-window", p.IdleWindow, "eventloop-idle: measured window")

	fs.IntVar(&p.GrConns, "goroutine-conns", p.GrConns, "goroutine: connections")
	fs.DurationVar(&p.GrLimit, "goroutine-limit", p.GrLimit, "goroutine: idle limit T; active clients send every T/4")
	fs.IntVar(&p.GrSilent, "goroutine-silent", p.GrSilent, "goroutine: one connection in this many is silent")
	fs.DurationVar(&p.GrWarmup, "goroutine-warmup", p.GrWarmup, "goroutine: warm-up after the clients connected")
	fs.DurationVar(&p.GrWindow, "goroutine-window", p.GrWindow, "goroutine: measured window")

	fs.IntVar(&p.HTTPConns, "http-conns", p.HTTPConns, "http: client connections")
	fs.IntVar(&p.HTTPRate, "http-rate", p.HTTPRate, "http: requests per second the client sends, over all its connections")
	fs.DurationVar(&p.HTTPDeadline, "http-deadline", p.HTTPDeadline, "http: the handler's deadline")
	fs.DurationVar(&p.HTTPWarmup, "http-warmup", p.HTTPWarmup, "http: warm-up")
	fs.DurationVar(&p.HTTPWindow, "http-window", p.HTTPWindow, "http: measured window")

	fs.IntVar(&p.RPCInFlight, "rpc-inflight", p.RPCInFlight, "rpc: requests in flight on the one connection")
	fs.IntVar(&p.RPCRate, "rpc-rate", p.RPCRate, "rpc: requests per second; the server answers each rpc-inflight/rpc-rate after it came")
	fs.DurationVar(&p.RPCDeadline, "rpc-deadline", p.RPCDeadline, "rpc: each request's deadline")
	fs.DurationVar(&p.RPCWarmup, "rpc-warmup", p.RPCWarmup, "rpc: warm-up")
	fs.DurationVar(&p.RPCWindow, "rpc-window", p.RPCWindow, "rpc: measured window")

	fs.IntVar(&p.SizeClassSessions, "sizeclass-sessions", p.SizeClassSessions, "sizeclass: sessions")
	fs.DurationVar(&p.SizeClassSettle, "sizeclass-settle", p.SizeClassSettle, "sizeclass: how long the sessions beat (every -period) before the heap is read; at least two periods")
}

func (p *params) check() error {
	switch {
	case p.Rounds < 1:
		return fmt.Errorf("-rounds %d: at least 1", p.Rounds)
	case p.Tick <= 0:
		return fmt.Errorf("-tick %v: must be > 0", p.Tick)
	case len(p.Sessions) == 0 || slices.Min(p.Sessions) < 1:
		return fmt.Errorf("-sessions %v: counts must be >= 1", p.Sessions)
	case p.Period <= 0 || p.Activity <= 0:
		return fmt.Errorf("-period %v, -activity %v: must be > 0", p.Period, p.Activity)
	case p.IdleLimit <= p.SessWindow+2*p.Activity:
		// Activity pauses for one window; active sessions must not expire.
		return fmt.Errorf("-idle-limit %v: must exceed -sessions-window plus twice -activity (%v)", p.IdleLimit, p.SessWindow+2*p.Activity)
	case p.SilentSessions < 2 || p.BusySilent < 2 || p.IdleSilent < 2 || p.GrSilent < 2:
		return fmt.Errorf("one in -silent-sessions, -busy-silent, -idle-silent, -goroutine-silent: each must be >= 2")
	case p.BusyConns < 1 || p.GrConns < 1 || p.IdleConns < 0:
		return fmt.Errorf("connection counts must be >= 1")
	case p.BusyLimit < 4*p.Tick || p.GrLimit < 4*p.Tick:
		return fmt.Errorf("-busy-limit %v, -goroutine-limit %v: must be at least 4 ticks", p.BusyLimit, p.GrLimit)
	case p.IdleSendMin <= 0 || p.IdleSendMax < p.IdleSendMin:
		return fmt.Errorf("-idle-send-min %v, -idle-send-max %v: 0 < min <= max", p.IdleSendMin, p.IdleSendMax)
	case 3*p.IdleActiveKeepAlive/2 <= p.IdleSendMax:
		return fmt.Errorf("-idle-active-keepalive %v: 1.5x it must exceed -idle-send-max %v, or active clients get closed", p.IdleActiveKeepAlive, p.IdleSendMax)
	case p.IdlePing <= 0 || p.IdleSilentKeepAlive <= 0:
		return fmt.Errorf("-idle-ping %v, -idle-silent-keepalive %v: must be > 0", p.IdlePing, p.IdleSilentKeepAlive)
	case p.HTTPConns < 1 || p.HTTPRate < 1 || p.RPCInFlight < 1 || p.RPCRate < 1:
		return fmt.Errorf("-http-conns, -http-rate, -rpc-inflight, -rpc-rate: must be >= 1")
	case p.SizeClassSessions < 1 || p.SizeClassSettle < 2*p.Period:
		return fmt.Errorf("-sizeclass-sessions %d, -sizeclass-settle %v: at least 1, and at least two -period (%v), so that every session beats", p.SizeClassSessions, p.SizeClassSettle, 2*p.Period)
	}
	return nil
}

// intList is a flag of comma-separated counts, written 1e6 or 1000000.
type intList []int

func (l *intList) String() string {
	var s []string
	for _, n := range *l {
		s = append(s, count(n))
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out []int
	for _, f := range strings.Split(v, ",") {
		var x float64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &x); err != nil || x < 1 || x != float64(int(x)) {
			return fmt.Errorf("%q is not a count", f)
		}
		out = append(out, int(x))
	}
	*l = out
	return nil
}
