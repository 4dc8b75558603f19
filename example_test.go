package hashedwheel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

func ExampleNewTimer() {
	// One timer for the whole program: 10ms precision, 1024 buckets.
	timer, err := hashedwheel.NewTimer(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithTicksPerWheel(1024),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()
	fmt.Println(timer.TickDuration(), timer.TicksPerWheel())
	// Output: 10ms 1024
}

func ExampleTimer_NewTimeout() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	done := make(chan struct{})
	task := hashedwheel.TimerFunc(func(timeout *hashedwheel.Timeout) {
		fmt.Println("expired:", timeout.IsExpired())
		close(done)
	})
	if _, err := timer.NewTimeout(task, 20*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	<-done
	// Output: expired: true
}

func ExampleTimer_AfterFunc() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	done := make(chan struct{})
	start := time.Now()
	timeout, err := timer.AfterFunc(30*time.Millisecond, func() { close(done) })
	if err != nil {
		log.Fatal(err)
	}
	<-done
	// The task never runs before the deadline; it may run up to a tick late.
	fmt.Println(!time.Now().Before(timeout.Deadline()), time.Since(start) >= 30*time.Millisecond)
	// Output: true true
}

func ExampleTimeout_Cancel() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	// An idle deadline, pushed back on every read: cancel and schedule again.
	idle, err := timer.AfterFunc(time.Minute, func() { fmt.Println("closing idle connection") })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(idle.Cancel(), idle.Cancel(), idle.IsCancelled(), timer.PendingTimeouts())
	// Output: true false true 0
}

func ExampleTimer_Stop() {
	timer, err := hashedwheel.NewTimer()
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if _, err := timer.AfterFunc(time.Hour, func() {}); err != nil {
			log.Fatal(err)
		}
	}
	unrun := timer.Stop()
	fmt.Println(len(unrun), unrun[0].IsCancelled(), len(timer.Stop()))

	_, err = timer.AfterFunc(time.Second, func() {})
	fmt.Println(err)
	// Output:
	// 3 true 0
	// hashedwheel: timer stopped
}

func ExampleTimer_WithTimeout() {
	// One timer for the whole program keeps every request's deadline.
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	// In an HTTP middleware, the parent would be r.Context().
	ctx, cancel := timer.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel() // releases the wheel timeout as soon as the work is done

	slowWork := time.After(time.Second)
	select {
	case <-slowWork:
		fmt.Println("finished")
	case <-ctx.Done():
		// Done at the first tick at or after the deadline, never before.
		fmt.Println(ctx.Err(), context.Cause(ctx))
	}
	// Output: context deadline exceeded context deadline exceeded
}
