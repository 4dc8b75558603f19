package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The processes of a scenario talk over their standard input and output, a
// line at a time (on standard output, the lines that start with linePrefix;
// anything else a library prints there goes with standard error): a process prints "ready" (and what the next one needs,
// such as its address) once it is set up; a server measures between the
// driver's "begin" and "end" lines and answers "end" with its figures as
// one JSON line; a client answers "end" by closing its connections and
// printing its figures. Closing a process's standard input tells it to exit.

// linePrefix starts every line a role process prints for the driver.
const linePrefix = "@@ "

// roles maps -role to the function a process of that role runs. The spec is
// the JSON the driver passed with -spec.
var roles = map[string]func(spec []byte) error{
	"sessions":      runSessionsRole,
	"gnet-server":   runGnetServerRole,
	"idle-client":   runIdleClientRole,
	"gorout-server": runGoroutineServerRole,
	"http-server":   runHTTPServerRole,
	"http-client":   runHTTPClientRole,
	"rpc-client":    runRPCClientRole,
	"rpc-server":    runRPCServerRole,
	"sizeclass":     runSizeClassRole,
}

func roleNames() []string {
	var s []string
	for r := range roles {
		s = append(s, r)
	}
	sort.Strings(s)
	return s
}

func runRole(role, spec string) int {
	f, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "-role %q: no such role (have %s)\n", role, strings.Join(roleNames(), ", "))
		return 2
	}
	if err := f([]byte(spec)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1
	}
	return 0
}

// child is a process of a scenario, run by the driver.
type child struct {
	role   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its standard output, a line at a time
	stderr *tailBuffer
	done   chan struct{} // closed when it has exited
	err    error         // its exit status, once done is closed
}

// startChild starts this program again with -role role and spec as JSON.
func startChild(role string, spec any) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	c := &child{role: role, lines: make(chan string, 16), stderr: &tailBuffer{max: 4096}, done: make(chan struct{})}
	c.cmd = exec.Command(exe, "-role", role, "-spec", string(b))
	c.cmd.Stderr = c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<24)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), linePrefix); ok {
				c.lines <- l
			} else {
				fmt.Fprintln(c.stderr, sc.Text())
			}
		}
		close(c.lines)
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// expect waits for the child's next line and returns it, or an error if the
// child exits or says nothing within timeout.
func (c *child) expect(timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l, ok := <-c.lines:
		if !ok {
			<-c.done
			return "", fmt.Errorf("%s exited (%v): %s", c.role, c.err, c.stderr.tail())
		}
		return l, nil
	case <-t.C:
		return "", fmt.Errorf("%s said nothing within %v: %s", c.role, timeout, c.stderr.tail())
	}
}

// expectPrefix waits for a line that starts with prefix and returns the rest.
func (c *child) expectPrefix(prefix string, timeout time.Duration) (string, error) {
	l, err := c.expect(timeout)
	if err != nil {
		return "", err
	}
	rest, ok := strings.CutPrefix(l, prefix)
	if !ok {
		return "", fmt.Errorf("%s said %q, want %q...: %s", c.role, l, prefix, c.stderr.tail())
	}
	return strings.TrimSpace(rest), nil
}

// ask sends a line and decodes the JSON line the child answers with.
func (c *child) ask(line string, timeout time.Duration, v any) error {
	if err := c.send(line); err != nil {
		return err
	}
	l, err := c.expect(timeout)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(l), v); err != nil {
		return fmt.Errorf("%s answered %q: %v: %s", c.role, l, err, c.stderr.tail())
	}
	return nil
}

// expectPrefixAfter sends line and waits for an answer starting with prefix.
func (c *child) expectPrefixAfter(line, prefix string, timeout time.Duration) (string, error) {
	if err := c.send(line); err != nil {
		return "", err
	}
	return c.expectPrefix(prefix, timeout)
}

func (c *child) send(line string) error {
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		return fmt.Errorf("telling %s %q: %v: %s", c.role, line, err, c.stderr.tail())
	}
	return nil
}

// finish closes the child's standard input, which tells it to exit, and
// waits for it for up to timeout; then it kills it.
func (c *child) finish(timeout time.Duration) error {
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("%s did not exit within %v of being told to: %s", c.role, timeout, c.stderr.tail())
	}
	if c.err != nil {
		return fmt.Errorf("%s: %v: %s", c.role, c.err, c.stderr.tail())
	}
	return nil
}

// kill ends the child at once; for errors, where finish would wait.
func (c *child) kill() {
	if c == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return "(no output on stderr)"
	}
	return s
}

// control is a role process's end of the line protocol: its standard input
// and output.
type control struct {
	in  *bufio.Scanner
	out *json.Encoder
	mu  sync.Mutex
}

func newControl() *control {
	return &control{in: bufio.NewScanner(os.Stdin), out: json.NewEncoder(os.Stdout)}
}

// say prints a line for the driver.
func (c *control) say(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(os.Stdout, linePrefix+format+"\n", args...)
}

// reply prints an outcome as one JSON line. Figures that are not numbers
// (a division by zero) are left out: JSON has no NaN.
func (c *control) reply(o outcome) error {
	for k, v := range o.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(o.Metrics, k)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(os.Stdout, linePrefix); err != nil {
		return err
	}
	return c.out.Encode(o)
}

// next returns the driver's next line, or io.EOF once it closed our input.
func (c *control) next() (string, error) {
	if !c.in.Scan() {
		if err := c.in.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}
	return strings.TrimSpace(c.in.Text()), nil
}

// want reads the driver's next line and fails unless it is line.
func (c *control) want(line string) error {
	l, err := c.next()
	if err != nil {
		return fmt.Errorf("waiting for %q: %w", line, err)
	}
	if l != line {
		return fmt.Errorf("got %q, want %q", l, line)
	}
	return nil
}

// measureUntilEnd answers the driver's "begin", which the caller has read,
// with "ok", and measures this process until the driver's "end", with a
// CPU profile named name over the same window; measuring, if not nil, is
// true in between.
func (c *control) measureUntilEnd(name string, measuring *atomic.Bool) (*profiledWindow, error) {
	w := &profiledWindow{}
	if err := w.begin(name, measuring); err != nil {
		return nil, err
	}
	c.say("ok")
	if err := c.want("end"); err != nil {
		return nil, err
	}
	return w, w.end(measuring)
}

// waitEOF returns once the driver closed our input.
func (c *control) waitEOF() {
	for {
		if _, err := c.next(); err != nil {
			return
		}
	}
}

// decodeSpec decodes a role's -spec.
func decodeSpec(spec []byte, v any) error {
	if len(spec) == 0 {
		return errors.New("no -spec")
	}
	if err := json.Unmarshal(spec, v); err != nil {
		return fmt.Errorf("-spec: %w", err)
	}
	return nil
}

// withTimeout runs f and returns its error, or an error once timeout has
// passed.
func withTimeout(timeout time.Duration, what string, f func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s did not finish within %v", what, timeout)
	}
}
