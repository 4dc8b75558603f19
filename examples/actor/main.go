// Command actor keeps sessions and their idle deadlines on one goroutine with
// no mutex: a Timer made WithoutWorker runs its tasks inside the actor's
// Advance. A message notes its time; the deadline's task closes the session or
// re-arms it at the idle limit after the last message, not once per message.
//
//	go run ./examples/actor
package main

import (
	"fmt"
	"log"
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
	next := s.last.Add(s.a.idle)
	if next.After(to.Deadline()) && s.a.wheel.ScheduleAt(to, s, next) == nil {
		return // a message came: look again at its idle deadline
	}
	delete(s.a.sessions, s.name)
	s.a.closed(s.name)
}

func newActor(idle time.Duration, closed func(name string)) (*actor, error) {
	wheel, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(10*time.Millisecond))
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
	a.sessions[name] = s
	return a.wheel.ScheduleAt(&s.idle, s, now.Add(a.idle))
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

// talk sends each name every 100ms until its time is up, then closes inbox.
func talk(inbox chan<- string, talkFor map[string]time.Duration) {
	for start := time.Now(); len(talkFor) > 0; time.Sleep(100 * time.Millisecond) {
		for name, d := range talkFor {
			if time.Since(start) >= d {
				delete(talkFor, name)
			} else {
				inbox <- name
			}
		}
	}
	close(inbox)
}

func main() {
	start := time.Now()
	a, err := newActor(300*time.Millisecond, func(name string) {
		fmt.Printf("%s closed after 300ms idle, at %v\n", name, time.Since(start).Round(10*time.Millisecond))
	})
	if err != nil {
		log.Fatal(err)
	}
	inbox := make(chan string)
	go talk(inbox, map[string]time.Duration{"quiet": 500 * time.Millisecond, "alice": 2 * time.Second, "bob": 2 * time.Second})
	if err := a.run(inbox); err != nil {
		log.Fatal(err)
	}
	fmt.Println("sessions open at the end:", len(a.sessions))
}
