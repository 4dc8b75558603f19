package hashedwheel

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"sync"
)

// goroutineID returns the ID of the calling goroutine, which Go does not
// expose otherwise. Stop uses it to tell that it runs inside a task on the
// worker or the pool, where waiting for the worker would deadlock. It parses
// the header of the goroutine's stack trace, "goroutine 42 [running]:", and
// costs about a microsecond; only Stop and the start of the worker and of
// pool goroutines call it. It returns 0, which is no goroutine's ID, if the
// header cannot be parsed: NewTimer then fails (see canReadGoroutineIDs).
func goroutineID() uint64 {
	var buf [64]byte
	return parseGoroutineID(buf[:runtime.Stack(buf[:], false)])
}

// parseGoroutineID returns the ID in a stack trace's header, or 0.
func parseGoroutineID(b []byte) uint64 {
	b, ok := bytes.CutPrefix(b, []byte("goroutine "))
	if !ok {
		return 0
	}
	b, _, _ = bytes.Cut(b, []byte(" "))
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// canReadGoroutineIDs reports whether goroutineID works in this Go release.
// If it did not, Stop called from a task would wait for the worker that
// runs it, forever; NewTimer fails instead.
var canReadGoroutineIDs = sync.OnceValue(func() bool { return goroutineID() != 0 })

// errGoroutineIDs is returned by NewTimer if this Go release writes stack
// traces in a form the package cannot read goroutine IDs from: Stop would
// then deadlock when called from a task. It is a bug to report.
var errGoroutineIDs = errors.New("hashedwheel: cannot read goroutine IDs from runtime.Stack " +
	"in this Go release, so Stop could not tell a call from a task; please report this bug")
