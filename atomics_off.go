//go:build !hashedwheel_explore

package hashedwheel

import (
	"sync"
	"sync/atomic"
)

// The synchronizing types of the package. Without the tag
// hashedwheel_explore each is an alias of the standard type, so the build
// compiles to the code it would with sync/atomic and sync themselves: no
// wrapper, no call, no cost. With the tag (atomics_on.go) each is a struct
// around the standard type whose methods call explorePoint before the
// operation, so that the interleaving explorer sees every synchronizing
// operation of the library, as tokio's loom does by replacing std's atomics.
//
// The library uses these and never sync/atomic or sync.Mutex directly
// (TestLibraryUsesOwnAtomics checks it). sync.Pool and sync.OnceValue stay
// as they are: a pooled object and a value computed once carry no state
// the explorer reasons about.
type (
	atomicBool           = atomic.Bool
	atomicInt32          = atomic.Int32
	atomicInt64          = atomic.Int64
	atomicUint32         = atomic.Uint32
	atomicUint64         = atomic.Uint64
	atomicPointer[T any] = atomic.Pointer[T]
	atomicValue          = atomic.Value
	atomicClockInt64     = atomic.Int64 // no point in either build: see atomics_on.go
	mutex                = sync.Mutex
)
