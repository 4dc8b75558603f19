// Command http gives each request of a net/http server a deadline kept by one
// shared hashedwheel.Timer, with timer.WithTimeout in a middleware, and loads
// the server from the same program. Fast handlers finish before the deadline
// (200); slow and stuck ones answer 503 when ctx.Done() closes. It prints the
// 200s and 503s, and how late after the deadline the 503s went out: never
// before it, about a tick after. It exits in a few seconds, with status 1 if a
// 503 came early or a request failed. Run it with: go run ./examples/http
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

const (
	deadline = 100 * time.Millisecond
	tick     = 10 * time.Millisecond
	requests = 600 // a third each of fast, slow and stuck
	clients  = 60  // concurrent
)

// withDeadline is the middleware: one wheel timeout per request, released by
// cancel as soon as the handler returns.
func withDeadline(timer *hashedwheel.Timer, d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := timer.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

var (
	mu    sync.Mutex                                                       // guards late and codes
	late  []time.Duration                                                  // how long after its deadline each 503 was sent
	codes = map[string]map[int]int{"/fast": {}, "/slow": {}, "/stuck": {}} // path -> status -> count
)

// work returns a handler that works for d (0: forever), or until the
// request's deadline.
func work(d time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		var done <-chan time.Time
		if d > 0 {
			done = time.After(d)
		}
		select {
		case <-done:
			fmt.Fprintln(w, "ok")
		case <-ctx.Done():
			dl, _ := ctx.Deadline()
			mu.Lock()
			late = append(late, time.Since(dl))
			mu.Unlock()
			http.Error(w, ctx.Err().Error(), http.StatusServiceUnavailable)
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "http:", err)
		os.Exit(1)
	}
}

func main() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tick))
	check(err)
	defer timer.Stop()
	mux := http.NewServeMux()
	mux.Handle("/fast", work(deadline/20))
	mux.Handle("/slow", work(3*deadline))
	mux.Handle("/stuck", work(0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	srv := &http.Server{Handler: withDeadline(timer, deadline, mux)}
	go srv.Serve(ln)

	paths := []string{"/fast", "/slow", "/stuck"}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for i := c; i < requests; i += clients {
				path, code := paths[i%len(paths)], 0
				if resp, err := client.Get("http://" + ln.Addr().String() + path); err == nil {
					code = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				codes[path][code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf("%d requests, %d at a time, deadline %v, tick %v, in %v\n",
		requests, clients, deadline, tick, time.Since(start).Round(time.Millisecond))
	_ = srv.Shutdown(context.Background())
	failed := 0
	for _, path := range paths {
		fmt.Printf("%-6s 200: %3d   503: %3d\n", path, codes[path][200], codes[path][503])
		failed += codes[path][0]
	}
	if failed > 0 || len(late) == 0 {
		check(fmt.Errorf("%d requests failed, %d got 503", failed, len(late)))
	}
	slices.Sort(late)
	n, us := len(late), func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	fmt.Printf("503s sent after their deadline: min %v, median %v, p99 %v, max %v\n",
		us(late[0]), us(late[n/2]), us(late[n*99/100]), us(late[n-1]))
	if late[0] < 0 {
		check(fmt.Errorf("a 503 was sent %v before its deadline", -late[0]))
	}
}
