package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// Request deadlines, from both ends.
//
// http: a net/http server whose handler derives the request's deadline from
// r.Context() and reads Done before it answers, measured as the server
// process; its client, in another process, sends HTTPRate requests per
// second over HTTPConns keep-alive connections, pipelining each
// connection's share of every 5ms.
//
// rpc: a client, measured as its process, that sends RPCRate requests per
// second over one connection to a server in another process that answers
// each RPCInFlight/RPCRate after it came (so that RPCInFlight are in flight,
// as when a Redis or memcached client pipelines to a busy server), each with
// a deadline of its own, armed when the request is written and released
// when its answer comes back. Requests are 16-byte frames; answers come back
// in order.
//
// Both run at a fixed rate, so that every variant's program does the same
// work at the same pace, and both have a variant with no deadline at all, so
// that the share of the program's CPU the deadline takes is also its CPU
// beyond that variant's.

func httpScenario(p params) *scenario {
	return &scenario{
		Name:  "http",
		Title: "Request deadlines, server: a net/http handler deriving its deadline from r.Context()",
		Variants: []variant{
			{ID: "wheel", Label: "Timer.WithTimeout", API: "ctx, cancel := timer.WithTimeout(r.Context(), d); select on ctx.Done(); cancel()"},
			{ID: "context", Label: "context.WithTimeout", API: "ctx, cancel := context.WithTimeout(r.Context(), d); select on ctx.Done(); cancel()", Base: true},
			{ID: "none", Label: "no deadline", API: "select on r.Context().Done()"},
		},
		Cases: []int{0},
		run:   runHTTP,
	}
}

func rpcScenario(p params) *scenario {
	return &scenario{
		Name:  "rpc",
		Title: "Request deadlines, client: pipelined requests over one connection, each with its deadline",
		Variants: []variant{
			{ID: "wheel", Label: "NewTimeout+Cancel", API: "timer.NewTimeout(task, d) when sent; Timeout.Cancel() when answered"},
			{ID: "afterfunc", Label: "time.AfterFunc", API: "time.AfterFunc(d, f) when sent; Timer.Stop() when answered", Base: true},
			{ID: "wheelctx", Label: "Timer.WithTimeout", API: "timer.WithTimeout(context.Background(), d) when sent; cancel() when answered"},
			{ID: "context", Label: "context.WithTimeout", API: "context.WithTimeout(context.Background(), d) when sent; cancel() when answered"},
			{ID: "none", Label: "no deadline", API: "nothing"},
		},
		Cases: []int{0},
		run:   runRPC,
	}
}

// httpServerSpec is the -spec of an http-server process.
type httpServerSpec struct {
	Variant  string        `json:"variant"`
	Deadline time.Duration `json:"deadline"`
	Tick     time.Duration `json:"tick"`
}

// httpClientSpec is the -spec of an http-client process.
type httpClientSpec struct {
	Addr  string `json:"addr"`
	Conns int    `json:"conns"`
	Rate  int    `json:"rate"`
}

func runHTTP(p params, v variant, _ int) (outcome, error) {
	srv, err := startChild("http-server", httpServerSpec{Variant: v.ID, Deadline: p.HTTPDeadline, Tick: p.Tick})
	if err != nil {
		return outcome{}, err
	}
	var cl *child
	fail := func(err error) (outcome, error) {
		cl.kill()
		srv.kill()
		return outcome{}, err
	}
	addr, err := srv.expectPrefix("ready ", 30*time.Second)
	if err != nil {
		return fail(err)
	}
	if cl, err = startChild("http-client", httpClientSpec{Addr: addr, Conns: p.HTTPConns, Rate: p.HTTPRate}); err != nil {
		return fail(err)
	}
	if _, err := cl.expectPrefix("ready", 30*time.Second); err != nil {
		return fail(err)
	}
	time.Sleep(p.HTTPWarmup)
	if _, err := srv.expectPrefixAfter("begin", "ok", 30*time.Second); err != nil {
		return fail(err)
	}
	time.Sleep(p.HTTPWindow)
	var so, co outcome
	if err := srv.ask("end", 30*time.Second, &so); err != nil {
		return fail(err)
	}
	if err := cl.ask("end", 30*time.Second, &co); err != nil {
		return fail(err)
	}
	if err := cl.finish(30 * time.Second); err != nil {
		return fail(err)
	}
	if err := srv.finish(30 * time.Second); err != nil {
		return outcome{}, err
	}
	for k, v := range co.Metrics {
		so.Metrics["client_"+k] = v
	}
	so.Violations = append(so.Violations, co.Violations...)
	return so, nil
}

// httpBody is every answer's body.
var httpBody = []byte("ok\n")

type httpHandler struct {
	spec  httpServerSpec
	timer *hashedwheel.Timer
	reqs  atomic.Int64
	late  atomic.Int64 // answers made after the deadline had passed: none should be
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := deadlineForRequest(h, r)
	select {
	case <-ctx.Done():
		h.late.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		_, _ = w.Write(httpBody)
	}
	if cancel != nil {
		cancel()
	}
	h.reqs.Add(1)
}

// deadlineForRequest derives the request's context, with its deadline.
func deadlineForRequest(h *httpHandler, r *http.Request) (context.Context, context.CancelFunc) {
	switch h.spec.Variant {
	case "wheel":
		return h.timer.WithTimeout(r.Context(), h.spec.Deadline)
	case "context":
		return context.WithTimeout(r.Context(), h.spec.Deadline)
	}
	return r.Context(), nil
}

func runHTTPServerRole(b []byte) error {
	var spec httpServerSpec
	if err := decodeSpec(b, &spec); err != nil {
		return err
	}
	h := &httpHandler{spec: spec}
	switch spec.Variant {
	case "wheel":
		t, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(spec.Tick))
		if err != nil {
			return err
		}
		if err := t.Start(); err != nil {
			return err
		}
		defer t.Stop()
		h.timer = t
	case "context", "none":
	default:
		return fmt.Errorf("no variant %q", spec.Variant)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	ctl := newControl()
	ctl.say("ready %s", ln.Addr())

	if err := ctl.want("begin"); err != nil {
		return err
	}
	reqs0 := h.reqs.Load()
	w, err := ctl.measureUntilEnd("http-"+spec.Variant, nil)
	if err != nil {
		return err
	}
	reqs := h.reqs.Load() - reqs0
	o := outcome{Metrics: map[string]float64{
		"reqs_per_s": float64(reqs) / w.Wall.Seconds(),
		"cores":      w.Cores(),
		"cpu_us_req": nsPer(w.CPU, reqs) / 1e3,
		"allocs_req": float64(w.Mallocs) / float64(max(reqs, 1)),
		"late":       float64(h.late.Load()),
	}}
	w.addProfile(o.Metrics)
	if err := ctl.reply(o); err != nil {
		return err
	}
	ctl.waitEOF()
	return srv.Close()
}

// httpTick is how often each client connection sends its share of the
// rate, pipelined.
const httpTick = 5 * time.Millisecond

func runHTTPClientRole(b []byte) error {
	var spec httpClientSpec
	if err := decodeSpec(b, &spec); err != nil {
		return err
	}
	var (
		done             = make(chan struct{})
		answers, non200s atomic.Int64
		wg               sync.WaitGroup
		conns            []net.Conn
	)
	req := []byte("GET /r HTTP/1.1\r\nHost: scenarios\r\n\r\n")
	perTick := float64(spec.Rate) * httpTick.Seconds() / float64(spec.Conns)
	for range spec.Conns {
		c, err := net.Dial("tcp", spec.Addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		wg.Go(func() {
			bw := bufio.NewWriter(c)
			br := bufio.NewReader(c)
			tk := time.NewTicker(httpTick)
			defer tk.Stop()
			owed := 0.0
			for {
				select {
				case <-done:
					return
				case <-tk.C:
				}
				owed += perTick
				n := int(owed)
				owed -= float64(n)
				for range n {
					_, _ = bw.Write(req)
				}
				if err := bw.Flush(); err != nil {
					return
				}
				for range n {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						non200s.Add(1)
					}
					answers.Add(1)
				}
			}
		})
	}
	ctl := newControl()
	var w measure.Window
	w.Begin()
	n0 := answers.Load()
	ctl.say("ready")
	if err := ctl.want("end"); err != nil {
		return err
	}
	w.End()
	n := answers.Load() - n0
	close(done)
	for _, c := range conns {
		_ = c.SetDeadline(time.Now())
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	o := outcome{Metrics: map[string]float64{
		"cores":      w.Cores(),
		"reqs_per_s": float64(n) / w.Wall.Seconds(),
		"non200s":    float64(non200s.Load()),
	}}
	if err := ctl.reply(o); err != nil {
		return err
	}
	ctl.waitEOF()
	return nil
}

// rpcSpec is the -spec of an rpc-client process.
type rpcSpec struct {
	Addr     string        `json:"addr"`
	Variant  string        `json:"variant"`
	InFlight int           `json:"inflight"`
	Rate     int           `json:"rate"`
	Deadline time.Duration `json:"deadline"`
	Tick     time.Duration `json:"tick"`
	Warmup   time.Duration `json:"warmup"`
	Window   time.Duration `json:"window"`
}

func runRPC(p params, v variant, _ int) (outcome, error) {
	delay := time.Duration(float64(time.Second) * float64(p.RPCInFlight) / float64(p.RPCRate))
	srv, err := startChild("rpc-server", rpcServerSpec{Delay: delay})
	if err != nil {
		return outcome{}, err
	}
	addr, err := srv.expectPrefix("ready ", 30*time.Second)
	if err != nil {
		srv.kill()
		return outcome{}, err
	}
	cl, err := startChild("rpc-client", rpcSpec{
		Addr: addr, Variant: v.ID, InFlight: p.RPCInFlight, Rate: p.RPCRate, Deadline: p.RPCDeadline,
		Tick: p.Tick, Warmup: p.RPCWarmup, Window: p.RPCWindow,
	})
	if err != nil {
		srv.kill()
		return outcome{}, err
	}
	var o outcome
	l, err := cl.expect(time.Minute + p.RPCWarmup + p.RPCWindow)
	if err == nil {
		err = decodeSpec([]byte(l), &o)
	}
	if err == nil {
		err = cl.finish(30 * time.Second)
	}
	if err != nil {
		cl.kill()
		srv.kill()
		return outcome{}, err
	}
	return o, srv.finish(30 * time.Second)
}

// rpcServerSpec is the -spec of an rpc-server process.
type rpcServerSpec struct {
	Delay time.Duration `json:"delay"`
}

// runRPCServerRole echoes every connection's bytes back to it, Delay after
// they came.
func runRPCServerRole(b []byte) error {
	var spec rpcServerSpec
	if err := decodeSpec(b, &spec); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	type chunk struct {
		due time.Time
		b   []byte
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			chunks := make(chan chunk, 1<<16)
			go func() { // reader
				defer close(chunks)
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						chunks <- chunk{time.Now().Add(spec.Delay), append([]byte(nil), buf[:n]...)}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { // writer
				defer c.Close()
				for ck := range chunks {
					time.Sleep(time.Until(ck.due))
					if _, err := c.Write(ck.b); err != nil {
						return
					}
				}
			}()
		}
	}()
	ctl := newControl()
	ctl.say("ready %s", ln.Addr())
	ctl.waitEOF()
	return ln.Close()
}

// inFlight is a request's deadline, in whichever form its variant keeps it.
type inFlight struct {
	id     uint64
	t      *time.Timer
	to     *hashedwheel.Timeout
	cancel context.CancelFunc
}

// rpcClient is the measured program.
type rpcClient struct {
	spec    rpcSpec
	timer   *hashedwheel.Timer
	expired atomic.Int64 // deadlines that ran: none should, answers come back in microseconds
}

// deadlineStart arms request id's deadline.
func (c *rpcClient) deadlineStart(id uint64) inFlight {
	f := inFlight{id: id}
	switch c.spec.Variant {
	case "afterfunc":
		f.t = time.AfterFunc(c.spec.Deadline, func() { c.deadlineExpired(id) })
	case "wheel":
		f.to, _ = c.timer.NewTimeout(hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { c.deadlineExpired(id) }), c.spec.Deadline)
	case "wheelctx":
		_, f.cancel = c.timer.WithTimeout(context.Background(), c.spec.Deadline)
	case "context":
		_, f.cancel = context.WithTimeout(context.Background(), c.spec.Deadline)
	}
	return f
}

// deadlineStop releases a request's deadline once its answer came back.
func (c *rpcClient) deadlineStop(f inFlight) {
	switch {
	case f.t != nil:
		f.t.Stop()
	case f.to != nil:
		f.to.Cancel()
	case f.cancel != nil:
		f.cancel()
	}
}

// deadlineExpired fails a request whose answer did not come in time.
func (c *rpcClient) deadlineExpired(uint64) { c.expired.Add(1) }

func runRPCClientRole(b []byte) error {
	c := &rpcClient{}
	if err := decodeSpec(b, &c.spec); err != nil {
		return err
	}
	switch c.spec.Variant {
	case "wheel", "wheelctx":
		t, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(c.spec.Tick))
		if err != nil {
			return err
		}
		if err := t.Start(); err != nil {
			return err
		}
		defer t.Stop()
		c.timer = t
	case "afterfunc", "context", "none":
	default:
		return fmt.Errorf("no variant %q", c.spec.Variant)
	}
	conn, err := net.Dial("tcp", c.spec.Addr)
	if err != nil {
		return err
	}
	var (
		done     = make(chan struct{}) // closed to stop the writer and the reader
		answered atomic.Int64
		wrongErr atomic.Value
	)
	// The in-flight queue: the writer queues each request's deadline before
	// it writes the request; the reader takes them in order as the answers
	// come back. Its room is four times what should be in flight, so that
	// the writer never waits for it unless the server stalls.
	queue := make(chan inFlight, 4*c.spec.InFlight)
	var wg sync.WaitGroup
	wg.Go(func() { // writer: Rate requests per second, those due every millisecond
		bw := bufio.NewWriterSize(conn, 64<<10)
		var frame [16]byte
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		start := time.Now()
		var id uint64
		for {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			for due := uint64(time.Since(start).Seconds() * float64(c.spec.Rate)); id < due; {
				id++
				f := c.deadlineStart(id)
				select {
				case queue <- f:
				case <-done:
					return
				}
				binary.LittleEndian.PutUint64(frame[:8], id)
				if _, err := bw.Write(frame[:]); err != nil {
					return
				}
			}
			if bw.Flush() != nil {
				return
			}
		}
	})
	wg.Go(func() { // reader
		br := bufio.NewReaderSize(conn, 64<<10)
		var frame [16]byte
		for {
			if _, err := io.ReadFull(br, frame[:]); err != nil {
				return
			}
			var f inFlight
			select {
			case f = <-queue:
			case <-done:
				return
			}
			if id := binary.LittleEndian.Uint64(frame[:8]); id != f.id {
				wrongErr.Store(fmt.Errorf("answer %d came back where %d was due", id, f.id))
				return
			}
			c.deadlineStop(f)
			answered.Add(1)
		}
	})

	time.Sleep(c.spec.Warmup)
	n0 := answered.Load()
	var w profiledWindow
	if err := w.begin("rpc-"+c.spec.Variant, nil); err != nil {
		return err
	}
	time.Sleep(c.spec.Window / 2)
	inFlightMid := len(queue)
	time.Sleep(c.spec.Window - c.spec.Window/2)
	if err := w.end(nil); err != nil {
		return err
	}
	n := answered.Load() - n0
	close(done)
	_ = conn.SetDeadline(time.Now())
	if err := withTimeout(10*time.Second, "stopping the client", func() error { wg.Wait(); return nil }); err != nil {
		return err
	}
	conn.Close()
	if e, ok := wrongErr.Load().(error); ok {
		return e
	}
	if n == 0 {
		return errors.New("no answers in the window")
	}
	o := outcome{Metrics: map[string]float64{
		"reqs_per_s": float64(n) / w.Wall.Seconds(),
		"in_flight":  float64(inFlightMid),
		"cores":      w.Cores(),
		"cpu_ns_req": nsPer(w.CPU, n),
		"allocs_req": float64(w.Mallocs) / float64(n),
		"expired":    float64(c.expired.Load()),
	}}
	w.addProfile(o.Metrics)
	return newControl().reply(o)
}
