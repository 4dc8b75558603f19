// Command actor shows a goroutine that owns its sessions and their idle
// deadlines with no mutex: a Timer made WithoutWorker runs the deadlines on
// the actor's goroutine, inside Advance. Each session holds its deadline, a
// Timeout, and is its task. A message only notes its time; when the
// deadline comes, the task closes the session, or, if a message came
// meanwhile, arms the Timeout again with ScheduleAt at the idle limit after
// that message: one wheel operation per idle limit, not one per message.
// Three clients talk for two seconds; one goes quiet and is closed.
//
//	go run ./examples/actor
package main

import (
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// actor owns the sessions: only its goroutine reads or writes them.
type actor struct {
	wheel    *hashedwheel.Timer
	idle     time.Duration
	sessions map[string]*session
	closed   func(name string) // called on the actor's goroutine
}

// session is one client's session and the task of its idle deadline.
type session struct {
	a    *actor
	name string
	last time.Time           // when its last message came
	idle hashedwheel.Timeout // lives here (sessions holds pointers): never copied or moved once armed
}

// Run, on the actor's goroutine, inside Advance, closes the session if no
// message came since its deadline was armed, or arms it again.
func (s *session) Run(to *hashedwheel.Timeout) {
	if next := s.last.Add(s.a.idle); next.After(to.Deadline()) {
		if err := s.a.wheel.ScheduleAt(to, s, next); err == nil {
			return // a message came: look again at its idle deadline
		}
	}
	delete(s.a.sessions, s.name)
	s.a.closed(s.name)
}

func newActor(idle time.Duration, closed func(name string)) (*actor, error) {
	wheel, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(),
		hashedwheel.WithTickDuration(10*time.Millisecond))
	if err != nil {
		return nil, err
	}
	return &actor{wheel: wheel, idle: idle, sessions: map[string]*session{}, closed: closed}, nil
}

// message notes that a message came for name at now, or opens its session
// with an idle deadline.
func (a *actor) message(name string, now time.Time) error {
	if s, ok := a.sessions[name]; ok {
		s.last = now // the deadline's task looks at it
		return nil
	}
	s := &session{a: a, name: name, last: now}
	if err := a.wheel.ScheduleAt(&s.idle, s, now.Add(a.idle)); err != nil {
		return err
	}
	a.sessions[name] = s
	return nil
}

// run serves the inbox until it is closed, then stops the wheel.
func (a *actor) run(inbox <-chan string) error {
	defer a.wheel.Stop()
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		sleep.Stop()
		if at, ok := a.wheel.NextDeadline(); ok {
			sleep.Reset(time.Until(at))
		}
		select {
		case name, ok := <-inbox:
			if !ok {
				return nil
			}
			if err := a.message(name, time.Now()); err != nil {
				return err
			}
		case <-sleep.C:
		}
		if _, err := a.wheel.Advance(time.Now()); err != nil {
			return err
		}
	}
}

// talk sends a message for name every 100ms until quiet has passed.
func talk(inbox chan<- string, name string, quiet time.Duration) {
	for end := time.Now().Add(quiet); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		inbox <- name
	}
}

func main() {
	start := time.Now()
	a, err := newActor(300*time.Millisecond, func(name string) {
		fmt.Printf("%-6s closed after %v idle, at %v\n", name, 300*time.Millisecond,
			time.Since(start).Round(10*time.Millisecond))
	})
	if err != nil {
		log.Fatal(err)
	}
	inbox := make(chan string)
	var clients sync.WaitGroup
	for name, quiet := range map[string]time.Duration{"quiet": 500 * time.Millisecond, "alice": 2 * time.Second, "bob": 2 * time.Second} {
		clients.Go(func() { talk(inbox, name, quiet) })
	}
	go func() {
		clients.Wait()
		close(inbox)
	}()
	if err := a.run(inbox); err != nil {
		log.Fatal(err)
	}
	fmt.Println("sessions open at the end:", len(a.sessions))
}
