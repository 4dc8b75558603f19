//go:build hashedwheel_explore

package hashedwheel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The synchronizing types of the package, seen by the interleaving
// explorer: see atomics_off.go. Each wraps the standard type, which keeps
// its noCopy, so that go vet still reports a copied Timeout or Timer. Each
// method calls explorePoint before its operation, named for what the
// operation does: the explorer counts a point whose name ends in " load" as
// a read and any other as a possible write (exReads in
// explore_internal_test.go), so every other name here is one that writes.
//
// A test of the explorer that must read one of these without a point (its
// checks, between two steps) reads the standard value inside: v, or m for a
// mutex.

// Point names.
const (
	ptLoad   = "atomic load"
	ptStore  = "atomic store"
	ptSwap   = "atomic swap"
	ptCAS    = "atomic cas"
	ptAdd    = "atomic add"
	ptAnd    = "atomic and"
	ptOr     = "atomic or"
	ptLock   = "mutex lock"
	ptUnlock = "mutex unlock"
)

type atomicBool struct{ v atomic.Bool }

func (x *atomicBool) Load() bool         { explorePoint(ptLoad); return x.v.Load() }
func (x *atomicBool) Store(val bool)     { explorePoint(ptStore); x.v.Store(val) }
func (x *atomicBool) Swap(new bool) bool { explorePoint(ptSwap); return x.v.Swap(new) }
func (x *atomicBool) CompareAndSwap(old, new bool) bool {
	explorePoint(ptCAS)
	return x.v.CompareAndSwap(old, new)
}

type atomicInt32 struct{ v atomic.Int32 }

func (x *atomicInt32) Load() int32           { explorePoint(ptLoad); return x.v.Load() }
func (x *atomicInt32) Store(val int32)       { explorePoint(ptStore); x.v.Store(val) }
func (x *atomicInt32) Swap(new int32) int32  { explorePoint(ptSwap); return x.v.Swap(new) }
func (x *atomicInt32) Add(delta int32) int32 { explorePoint(ptAdd); return x.v.Add(delta) }
func (x *atomicInt32) And(mask int32) int32  { explorePoint(ptAnd); return x.v.And(mask) }
func (x *atomicInt32) Or(mask int32) int32   { explorePoint(ptOr); return x.v.Or(mask) }
func (x *atomicInt32) CompareAndSwap(old, new int32) bool {
	explorePoint(ptCAS)
	return x.v.CompareAndSwap(old, new)
}

type atomicInt64 struct{ v atomic.Int64 }

func (x *atomicInt64) Load() int64           { explorePoint(ptLoad); return x.v.Load() }
func (x *atomicInt64) Store(val int64)       { explorePoint(ptStore); x.v.Store(val) }
func (x *atomicInt64) Swap(new int64) int64  { explorePoint(ptSwap); return x.v.Swap(new) }
func (x *atomicInt64) Add(delta int64) int64 { explorePoint(ptAdd); return x.v.Add(delta) }
func (x *atomicInt64) And(mask int64) int64  { explorePoint(ptAnd); return x.v.And(mask) }
func (x *atomicInt64) Or(mask int64) int64   { explorePoint(ptOr); return x.v.Or(mask) }
func (x *atomicInt64) CompareAndSwap(old, new int64) bool {
	explorePoint(ptCAS)
	return x.v.CompareAndSwap(old, new)
}

type atomicUint32 struct{ v atomic.Uint32 }

func (x *atomicUint32) Load() uint32            { explorePoint(ptLoad); return x.v.Load() }
func (x *atomicUint32) Store(val uint32)        { explorePoint(ptStore); x.v.Store(val) }
func (x *atomicUint32) Swap(new uint32) uint32  { explorePoint(ptSwap); return x.v.Swap(new) }
func (x *atomicUint32) Add(delta uint32) uint32 { explorePoint(ptAdd); return x.v.Add(delta) }
func (x *atomicUint32) And(mask uint32) uint32  { explorePoint(ptAnd); return x.v.And(mask) }
func (x *atomicUint32) Or(mask uint32) uint32   { explorePoint(ptOr); return x.v.Or(mask) }
func (x *atomicUint32) CompareAndSwap(old, new uint32) bool {
	explorePoint(ptCAS)
	return x.v.CompareAndSwap(old, new)
}

type atomicUint64 struct{ v atomic.Uint64 }

func (x *atomicUint64) Load() uint64            { explorePoint(ptLoad); return x.v.Load() }
func (x *atomicUint64) Store(val uint64)        { explorePoint(ptStore); x.v.Store(val) }
func (x *atomicUint64) Swap(new uint64) uint64  { explorePoint(ptSwap); return x.v.Swap(new) }
func (x *atomicUint64) Add(delta uint64) uint64 { explorePoint(ptAdd); return x.v.Add(delta) }
func (x *atomicUint64) And(mask uint64) uint64  { explorePoint(ptAnd); return x.v.And(mask) }
func (x *atomicUint64) Or(mask uint64) uint64   { explorePoint(ptOr); return x.v.Or(mask) }
func (x *atomicUint64) CompareAndSwap(old, new uint64) bool {
	explorePoint(ptCAS)
	return x.v.CompareAndSwap(old, new)
}

type atomicPointer[T any] struct{ v atomic.Pointer[T] }

func (x *atomicPointer[T]) Load() *T       { explorePoint(ptLoad); return x.v.Load() }
func (x *atomicPointer[T]) Store(val *T)   { explorePoint(ptStore); x.v.Store(val) }
func (x *atomicPointer[T]) Swap(new *T) *T { explorePoint(ptSwap); return x.v.Swap(new) }
func (x *atomicPointer[T]) CompareAndSwap(old, new *T) bool {
	explorePoint(ptCAS)
	return x.v.CompareAndSwap(old, new)
}

type atomicValue struct{ v atomic.Value }

func (x *atomicValue) Load() any        { explorePoint(ptLoad); return x.v.Load() }
func (x *atomicValue) Store(val any)    { explorePoint(ptStore); x.v.Store(val) }
func (x *atomicValue) Swap(new any) any { explorePoint(ptSwap); return x.v.Swap(new) }
func (x *atomicValue) CompareAndSwap(old, new any) bool {
	explorePoint(ptCAS)
	return x.v.CompareAndSwap(old, new)
}

// atomicClockInt64 is the standard atomic.Int64 in both builds, for a
// cache of a reading of the real clock (Timer.life.clockSeen): whether an
// access comes, and what it finds, depends on how much real time has
// passed, which the explorer does not replay, so a point there would make
// the same choices take different steps. Whatever it holds, the caller
// returns a reading of the clock: it orders nothing the explorer checks.
type atomicClockInt64 = atomic.Int64

// mutex is a sync.Mutex whose Lock the explorer schedules: it tries the
// lock, and if it is held parks at "lock-wait" (the explorer chooses the
// goroutine again only after another's step that may write, the holder's
// Unlock say) and tries again. A goroutine the explorer does not drive
// blocks as on a sync.Mutex once no explorer is installed, and otherwise
// yields between tries.
type mutex struct{ m sync.Mutex }

func (x *mutex) Lock() {
	for {
		explorePoint(ptLock)
		if x.m.TryLock() {
			return
		}
		if exploreHook.Load() == nil {
			x.m.Lock()
			return
		}
		explorePoint("lock-wait")
		runtime.Gosched()
	}
}

func (x *mutex) TryLock() bool { explorePoint(ptLock); return x.m.TryLock() }
func (x *mutex) Unlock()       { explorePoint(ptUnlock); x.m.Unlock() }
