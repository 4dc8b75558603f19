// Command http gives each request of a net/http server a deadline kept by one
// shared hashedwheel.Timer, with Timer.WithTimeout in a middleware, and loads
// the server itself with fast requests (200) and slow and stuck ones, which
// answer 503 when ctx.Done() closes: never before the deadline, about a tick
// after. It exits with status 1 if a 503 came early or a request failed.
//
//	go run ./examples/http
package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel"
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

// work returns a handler that works for d, or answers 503 at the deadline and sends late how late.
func work(d time.Duration, late chan<- time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
			fmt.Fprintln(w, "ok")
		case <-r.Context().Done():
			dl, _ := r.Context().Deadline()
			late <- time.Since(dl)
			http.Error(w, r.Context().Err().Error(), http.StatusServiceUnavailable)
		}
	}
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err) // run has stopped the Timer
	}
}

// run serves fast, slow and stuck requests on loopback, a third each, from
// clients goroutines at a time, and prints what they got.
func run() error {
	const deadline, tick, requests, clients = 100 * time.Millisecond, 10 * time.Millisecond, 600, 60
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tick))
	if err != nil {
		return err
	}
	defer timer.Stop() // after the server's Shutdown, deferred below
	late := make(chan time.Duration, requests)
	mux := http.NewServeMux()
	mux.Handle("/fast", work(deadline/20, late))
	mux.Handle("/slow", work(3*deadline, late))
	mux.Handle("/stuck", work(time.Hour, late))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: withDeadline(timer, deadline, mux)}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	paths, got := []string{"/fast", "/slow", "/stuck"}, make(chan string, requests)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := c; i < requests; i += clients {
				path, code := paths[i%len(paths)], 0 // 0: the request failed
				if resp, err := client.Get("http://" + ln.Addr().String() + path); err == nil {
					code = resp.StatusCode
					resp.Body.Close()
				}
				got <- fmt.Sprint(path, " ", code)
			}
		})
	}
	wg.Wait()
	count := map[string]int{}
	for range requests {
		count[<-got]++
	}
	for _, p := range paths {
		fmt.Printf("%-6s 200: %3d   503: %3d   failed: %d\n", p, count[p+" 200"], count[p+" 503"], count[p+" 0"])
	}
	n, first, last := len(late), time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for range n { // one per 503, each sent before its response
		d := <-late
		first, last = min(first, d), max(last, d)
	}
	fmt.Printf("%d 503s sent %v to %v after their deadline of %v (tick %v)\n", n, first, last, deadline, tick)
	if n == 0 || first < 0 || n+count["/fast 200"] != requests {
		return fmt.Errorf("%d of %d requests got 503 or a fast 200; the first 503 %v after its deadline",
			n+count["/fast 200"], requests, first)
	}
	return nil
}
