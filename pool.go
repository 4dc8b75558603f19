package hashedwheel

// taskPool runs expired timeouts' tasks on a fixed set of goroutines
// (WithTaskWorkers). The worker submits; the pool goroutines take tasks in
// the order submitted. The queue is unbounded, so the worker never waits for
// a slow task; it is a ring that grows by doubling, so submitting allocates
// nothing once it is big enough.
//
// Idle pool goroutines wait on a channel, not a sync.Cond, so that inside a
// testing/synctest bubble they are durably blocked and the fake clock moves.
type taskPool struct {
	timer *Timer // immutable

	// mu guards the fields below it.
	mu      mutex
	ring    []run // capacity a power of two
	head    int   // index of the oldest task
	n       int   // tasks queued
	waiting int   // pool goroutines waiting on wakeup
	closed  bool  // no more submissions; goroutines exit when empty
	live    int   // pool goroutines running

	// wakeup carries one token per waiting goroutine to wake. Its buffer
	// holds as many tokens as there are goroutines, so sends never block.
	wakeup chan struct{}

	// done is closed by the last pool goroutine to exit after close.
	done chan struct{}

	// ids holds the goroutine IDs of the pool goroutines, so that Stop can
	// tell it is called from a pooled task. Each written by its goroutine
	// as it starts; atomic.
	ids []atomicUint64
}

func newTaskPool(t *Timer, n int) *taskPool {
	return &taskPool{
		timer:  t,
		ring:   make([]run, 64),
		wakeup: make(chan struct{}, n),
		done:   make(chan struct{}),
		ids:    make([]atomicUint64, n),
	}
}

// start starts the pool goroutines. Start calls it, before the worker runs.
func (p *taskPool) start() {
	p.live = len(p.ids)
	for i := range p.ids {
		go p.loop(i)
	}
}

// run is a task run handed to the pool: the timeout and its task, read by
// the worker as it expired it (a Schedule may arm the timeout again with
// another task before the run starts).
type run struct {
	to   *Timeout
	task TimerTask
}

// submit queues a run of task, the task of the expired timeout to. Worker
// only.
func (p *taskPool) submit(to *Timeout, task TimerTask) {
	p.mu.Lock()
	if p.n == len(p.ring) {
		grown := make([]run, 2*len(p.ring))
		for i := range p.n {
			grown[i] = p.ring[(p.head+i)&(len(p.ring)-1)]
		}
		p.ring, p.head = grown, 0
	}
	p.ring[(p.head+p.n)&(len(p.ring)-1)] = run{to, task}
	p.n++
	if p.waiting > 0 {
		p.waiting--
		p.wakeup <- struct{}{}
	}
	p.mu.Unlock()
}

// dequeue removes and returns the oldest run queued. p.mu is held, and p.n
// is not 0.
func (p *taskPool) dequeue() run {
	r := p.ring[p.head]
	p.ring[p.head] = run{}
	p.head = (p.head + 1) & (len(p.ring) - 1)
	p.n--
	return r
}

// take returns the next run, waiting for one; ok is false once the pool is
// closed and empty.
func (p *taskPool) take() (r run, ok bool) {
	for {
		p.mu.Lock()
		if p.n > 0 {
			r = p.dequeue()
			p.mu.Unlock()
			return r, true
		}
		if p.closed {
			p.mu.Unlock()
			return run{}, false
		}
		p.waiting++
		p.mu.Unlock()
		<-p.wakeup
	}
}

// loop is pool goroutine i.
func (p *taskPool) loop(i int) {
	p.ids[i].Store(goroutineID())
	exited := false
	defer func() {
		if !exited {
			// A task called runtime.Goexit: replace this goroutine.
			p.timer.logError("hashedwheel: a task called runtime.Goexit on a task worker goroutine; " +
				"it is replaced by a new one")
			go p.loop(i)
			return
		}
		p.mu.Lock()
		p.live--
		last := p.live == 0
		p.mu.Unlock()
		if last {
			close(p.done)
		}
	}()
	for {
		r, ok := p.take()
		if !ok {
			break
		}
		p.timer.runTimeout(r.to, r.task)
	}
	exited = true
}

// close lets the pool goroutines finish the queued tasks and exit: done is
// closed once they have. The worker calls it as it exits (see
// Timer.waitForPool), once or, resuming its clean-up, again.
func (p *taskPool) close() {
	p.mu.Lock()
	p.closed = true
	for ; p.waiting > 0; p.waiting-- {
		p.wakeup <- struct{}{}
	}
	p.mu.Unlock()
}

// runs reports whether goroutine id is one of the pool's. A nil pool has
// none.
func (p *taskPool) runs(id uint64) bool {
	if p == nil {
		return false
	}
	for i := range p.ids {
		if p.ids[i].Load() == id {
			return true
		}
	}
	return false
}
