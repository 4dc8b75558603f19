package hashedwheel

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noop() {}

func TestTimeoutIsOneSmallAllocation(t *testing.T) {
	// 64 bytes is a size class of its own; a 65th byte would cost 16 more.
	assert.Equal(t, uintptr(64), unsafe.Sizeof(Timeout{}))

	tm, err := NewTimer()
	require.NoError(t, err)
	defer tm.Stop()
	task := TimerFunc(func(*Timeout) {})
	require.NoError(t, tm.Start())
	allocs := testing.AllocsPerRun(1000, func() {
		to, err := tm.NewTimeout(task, time.Hour)
		if err != nil {
			panic(err)
		}
		to.Cancel()
	})
	assert.Equal(t, 1.0, allocs, "NewTimeout and Cancel must allocate only the Timeout")
	allocs = testing.AllocsPerRun(1000, func() {
		to, err := tm.AfterFunc(time.Hour, noop)
		if err != nil {
			panic(err)
		}
		to.Cancel()
	})
	assert.Equal(t, 1.0, allocs, "AfterFunc must allocate only the Timeout")
}
