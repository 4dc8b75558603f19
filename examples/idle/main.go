// Command idle closes idle TCP connections with one shared hashedwheel.Timer.
//
// It starts a TCP server on a loopback port chosen by the system
// (127.0.0.1:0) that closes any connection which has sent nothing for
// idleLimit. Every connection shares one Timer: a hashed wheel makes
// scheduling and cancelling a timeout O(1), so rearming it on every line is
// cheap even with many thousands of connections.
//
// The pattern is the simplest honest one. On every line received, the
// connection's goroutine cancels the pending idle timeout and schedules a new
// one with AfterFunc. If Cancel returns false, the timeout has already fired
// and the timer is closing the connection, so the goroutine stops reading.
// When a timeout fires, its task (on the timer's worker goroutine) closes the
// connection, which is short enough to run there.
//
// The same program then starts a few clients. Each sends some lines at
// intervals shorter than the limit, so the server keeps its connection open,
// then goes quiet and reads until the server closes the connection. Each
// client reports how long the connection stayed open after its last message.
// That time must be at least idleLimit, because the timer never fires early,
// and should be at most about one tick later.
//
// The program takes no flags, exits by itself within a few seconds and exits
// with status 1 if anything unexpected happens, for example a connection
// closed too early or not closed within closeBudget. Run it with:
//
//	go run ./examples/idle
//
// or, to check it for data races:
//
//	go run -race ./examples/idle
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

const (
	// idleLimit is how long a connection may stay silent before the server
	// closes it.
	idleLimit = 300 * time.Millisecond

	// tick is the timer's tick. A timeout fires at the first tick at or after
	// its deadline, so a connection is closed between idleLimit and about
	// idleLimit+tick after its last line.
	tick = 20 * time.Millisecond

	// numClients is how many clients the program starts.
	numClients = 4

	// closeBudget is how long a client waits, after its last message, for
	// the server to close the connection. Waiting longer is a failure.
	closeBudget = 5 * time.Second

	// runBudget bounds the whole program: every dial, sleep and read gives up
	// when it runs out.
	runBudget = 10 * time.Second
)

// start is when the program started; log lines show the time since then.
var start = time.Now()

// logf prints a line prefixed with the time since the program started. It is
// safe for concurrent use: each call is a single write to os.Stdout.
func logf(format string, args ...any) {
	fmt.Printf("%6dms  %s\n", time.Since(start).Milliseconds(), fmt.Sprintf(format, args...))
}

// failures collects what went wrong, from any goroutine.
type failures struct {
	mu   sync.Mutex
	list []string
}

func (f *failures) add(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	logf("FAIL: %s", msg)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, msg)
}

func (f *failures) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.list...)
}

func main() {
	// A watchdog that cannot be fooled by a stuck goroutine: whatever
	// happens, the program ends shortly after runBudget.
	watchdog := time.AfterFunc(runBudget+2*time.Second, func() {
		fmt.Fprintln(os.Stderr, "idle: watchdog: the program did not finish in time")
		os.Exit(2)
	})
	err := run()
	watchdog.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), runBudget)
	defer cancel()

	// One timer for every connection. 64 buckets of 20ms cover 1.28s per
	// turn of the wheel, more than idleLimit, so each timeout fires in its
	// first round.
	timer, err := hashedwheel.NewTimer(
		hashedwheel.WithTickDuration(tick),
		hashedwheel.WithTicksPerWheel(64),
	)
	if err != nil {
		return fmt.Errorf("create timer: %w", err)
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0") // loopback only
	if err != nil {
		timer.Stop()
		return fmt.Errorf("listen: %w", err)
	}
	logf("server: listening on %s, idle limit %v, tick %v", ln.Addr(), idleLimit, timer.TickDuration())

	fails := &failures{}
	srv := &server{ln: ln, timer: timer, fails: fails}
	srv.wg.Add(1)
	go srv.serve()

	// Client i sends 3+i lines, 50ms*(i+1) apart: up to 200ms, well under
	// idleLimit, so the server must keep every connection open until the
	// client goes quiet, even though some stay open for over a second.
	results := make([]clientResult, numClients)
	var clients sync.WaitGroup
	for i := range numClients {
		clients.Add(1)
		go func() {
			defer clients.Done()
			results[i] = runClient(ctx, ln.Addr().String(), i+1, 3+i, time.Duration(i+1)*50*time.Millisecond)
		}()
	}
	// Each client gives up by itself at its read deadline or when ctx ends,
	// so this wait is bounded.
	clients.Wait()

	// Shut down: the listener first, so no new connection arrives, then wait
	// for the connection goroutines. They have all returned or are about to,
	// because every client either saw its connection closed or closed it.
	if err := ln.Close(); err != nil {
		fails.add("close listener: %v", err)
	}
	srv.wg.Wait()
	pendingBefore := timer.PendingTimeouts()
	// Stop cancels and returns every timeout still pending. There should be
	// none: each connection's last timeout fired.
	left := timer.Stop()

	fmt.Println()
	fmt.Println("summary:")
	for _, r := range results {
		if r.err != nil {
			fails.add("client %d: %v", r.id, r.err)
			continue
		}
		fmt.Printf("  client %d: sent %d lines %v apart, connection open %v in all, closed %v after its last message (limit %v, +%v)\n",
			r.id, r.sent, r.interval, r.total.Round(time.Millisecond),
			r.afterLast.Round(time.Millisecond), idleLimit, (r.afterLast - idleLimit).Round(time.Millisecond))
		if r.afterLast < idleLimit {
			fails.add("client %d: connection closed %v after its last message, before the idle limit %v",
				r.id, r.afterLast, idleLimit)
		}
	}
	fmt.Printf("  connections accepted: %d, closed for idleness: %d\n", srv.accepted.Load(), srv.idleClosed.Load())
	fmt.Printf("  pending timeouts before Stop: %d, returned by Stop: %d\n", pendingBefore, len(left))
	if n := srv.idleClosed.Load(); n != numClients {
		fails.add("%d connections closed for idleness, want %d", n, numClients)
	}
	if len(left) != 0 {
		fails.add("Stop returned %d pending timeouts, want 0", len(left))
	}

	if list := fails.all(); len(list) > 0 {
		return fmt.Errorf("%d problem(s):\n  %s", len(list), strings.Join(list, "\n  "))
	}
	fmt.Println("ok: every connection stayed open while active and was closed after going idle")
	return nil
}

// server accepts connections and closes those idle for longer than idleLimit.
// Its fields are set before serve starts and not changed after, except the
// atomic counters.
type server struct {
	ln    net.Listener
	timer *hashedwheel.Timer // shared by every connection
	fails *failures

	wg         sync.WaitGroup // serve and one per connection
	accepted   atomic.Int64
	idleClosed atomic.Int64
}

// serve accepts connections until the listener is closed.
func (s *server) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) { // ErrClosed: shut down by run
				s.fails.add("accept: %v", err)
			}
			return
		}
		id := s.accepted.Add(1)
		logf("server: accepted connection %d from %s", id, conn.RemoteAddr())
		s.wg.Add(1)
		go s.handle(&idleConn{id: id, conn: conn, srv: s})
	}
}

// idleConn is one server-side connection.
type idleConn struct {
	id   int64
	conn net.Conn
	srv  *server

	// timeout is the pending idle timeout. Only the connection's goroutine
	// (handle) reads or writes it; the timer's task never touches it.
	timeout *hashedwheel.Timeout

	// closedIdle is set by the timer's task before it closes conn, so that
	// handle knows the read error that follows is expected.
	closedIdle atomic.Bool
}

// errExpired reports that the idle timeout fired: the timer owns the close.
var errExpired = errors.New("idle timeout already fired")

// handle reads lines until the connection is closed, rearming the idle
// timeout on each one.
func (s *server) handle(c *idleConn) {
	defer s.wg.Done()

	// Arm the timeout at once, so that a client that never sends is closed
	// too.
	if err := c.touch(); err != nil {
		c.abort(err)
		return
	}
	sc := bufio.NewScanner(c.conn)
	for sc.Scan() {
		if err := c.touch(); err != nil {
			c.abort(err)
			return
		}
	}
	err := sc.Err()
	switch {
	case c.closedIdle.Load():
		// The timer closed the connection, which ended the read with
		// net.ErrClosed. This is the normal end here; expire logged it.
	case err == nil:
		// The client closed the connection first (EOF). None does in this
		// program, but a real server must handle it.
		if !c.disarm() {
			if err := c.conn.Close(); err != nil {
				s.fails.add("connection %d: close: %v", c.id, err)
			}
			logf("server: connection %d closed by the client", c.id)
		} // else the timeout fired meanwhile and its task closes conn.
	default:
		c.abort(fmt.Errorf("read: %w", err))
	}
}

// disarm cancels the pending idle timeout, if any. It reports whether the
// timeout had already fired, in which case its task owns closing conn.
func (c *idleConn) disarm() (fired bool) {
	if c.timeout == nil || c.timeout.Cancel() {
		return false
	}
	// Cancel reports false only if the timeout is no longer pending: it
	// expired, or Timer.Stop cancelled it.
	return c.timeout.IsExpired()
}

// touch replaces the pending idle timeout with a fresh one, due idleLimit
// from now. It returns errExpired if the old one could not be cancelled
// because it already fired.
func (c *idleConn) touch() error {
	if c.disarm() {
		return errExpired
	}
	last := time.Now()
	t, err := c.srv.timer.AfterFunc(idleLimit, func() { c.expire(last) })
	if err != nil {
		return fmt.Errorf("schedule idle timeout: %w", err)
	}
	c.timeout = t
	return nil
}

// expire runs on the timer's worker goroutine when the connection has been
// idle for idleLimit. last is when the line that armed this timeout arrived.
func (c *idleConn) expire(last time.Time) {
	idle := time.Since(last)
	c.closedIdle.Store(true)
	if err := c.conn.Close(); err != nil {
		c.srv.fails.add("connection %d: close idle: %v", c.id, err)
		return
	}
	c.srv.idleClosed.Add(1)
	logf("server: closed idle connection %d (%s) after %v without a line", c.id, c.conn.RemoteAddr(), idle.Round(time.Millisecond))
}

// abort ends a connection whose goroutine cannot go on, unless the timer
// already owns the close. Any err but errExpired is a failure.
func (c *idleConn) abort(err error) {
	if errors.Is(err, errExpired) {
		return
	}
	c.srv.fails.add("connection %d: %v", c.id, err)
	if c.disarm() {
		return // the timeout fired; its task closes conn
	}
	if cerr := c.conn.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		c.srv.fails.add("connection %d: close after %v: %v", c.id, err, cerr)
	}
}

// clientResult is what one client observed.
type clientResult struct {
	id        int
	sent      int
	interval  time.Duration
	total     time.Duration // from dial to the server's close
	afterLast time.Duration // from the last message to the server's close
	err       error
}

// runClient dials addr, sends n lines interval apart, then reads until the
// server closes the connection.
func runClient(ctx context.Context, addr string, id, n int, interval time.Duration) (res clientResult) {
	res = clientResult{id: id, interval: interval}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		res.err = fmt.Errorf("dial: %w", err)
		return res
	}
	dialed := time.Now()
	defer func() {
		// Closing our end after the server closed its end is fine and
		// returns nil; report anything else.
		if err := conn.Close(); err != nil && res.err == nil {
			res.err = fmt.Errorf("close: %w", err)
		}
	}()
	// No write or read may outlive the program's budget.
	deadline, _ := ctx.Deadline() // run always sets one
	if err := conn.SetDeadline(deadline); err != nil {
		res.err = fmt.Errorf("set deadline: %w", err)
		return res
	}
	logf("client %d: connected from %s", id, conn.LocalAddr())

	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				res.err = ctx.Err()
				return res
			case <-time.After(interval):
			}
		}
		if _, err := fmt.Fprintf(conn, "client %d line %d\n", id, i+1); err != nil {
			res.err = fmt.Errorf("write line %d: %w", i+1, err)
			return res
		}
		res.sent++
	}
	last := time.Now()
	logf("client %d: sent %d lines, now quiet", id, n)

	// Wait for the server to close the connection, at most closeBudget.
	readDeadline := last.Add(closeBudget)
	if deadline.Before(readDeadline) {
		readDeadline = deadline
	}
	if err := conn.SetReadDeadline(readDeadline); err != nil {
		res.err = fmt.Errorf("set read deadline: %w", err)
		return res
	}
	var buf [64]byte
	got, err := conn.Read(buf[:])
	closed := time.Now()
	res.total, res.afterLast = closed.Sub(dialed), closed.Sub(last)
	switch {
	case errors.Is(err, io.EOF):
		logf("client %d: server closed the connection %v after my last line", id, res.afterLast.Round(time.Millisecond))
	case errors.Is(err, os.ErrDeadlineExceeded):
		res.err = fmt.Errorf("connection not closed %v after the last line", res.afterLast.Round(time.Millisecond))
	case err != nil:
		res.err = fmt.Errorf("read: %w", err)
	default:
		res.err = fmt.Errorf("unexpected data from the server: %q", buf[:got])
	}
	return res
}
