package hashedwheel_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

func TestInvalidOptionsAreRejected(t *testing.T) {
	tests := []struct {
		name    string
		opts    []hashedwheel.Option
		wantErr string
	}{
		{"zero tick", []hashedwheel.Option{hashedwheel.WithTickDuration(0)}, "WithTickDuration(0s)"},
		{"negative tick", []hashedwheel.Option{hashedwheel.WithTickDuration(-time.Second)}, "WithTickDuration(-1s)"},
		{"tick times wheel overflows",
			[]hashedwheel.Option{hashedwheel.WithTickDuration(math.MaxInt64/512 + 1)},
			"WithTickDuration(5003h59m58.509481984s): with 512 ticks per wheel it must be at most 5003h59m58.509481983s"},
		{"overflow after rounding the wheel up",
			[]hashedwheel.Option{hashedwheel.WithTickDuration(math.MaxInt64 / 600), hashedwheel.WithTicksPerWheel(600)},
			"with 1024 ticks per wheel"},
		{"maximal tick, two buckets", []hashedwheel.Option{hashedwheel.WithTickDuration(math.MaxInt64), hashedwheel.WithTicksPerWheel(2)},
			"WithTickDuration(2562047h47m16.854775807s)"},
		{"zero wheel", []hashedwheel.Option{hashedwheel.WithTicksPerWheel(0)}, "WithTicksPerWheel(0)"},
		{"negative wheel", []hashedwheel.Option{hashedwheel.WithTicksPerWheel(-3)}, "WithTicksPerWheel(-3)"},
		{"wheel over 2^30", []hashedwheel.Option{hashedwheel.WithTicksPerWheel(1<<30 + 1)}, "WithTicksPerWheel(1073741825)"},
		{"nil executor", []hashedwheel.Option{hashedwheel.WithTaskExecutor(nil)}, "WithTaskExecutor(nil)"},
		{"nil logger", []hashedwheel.Option{hashedwheel.WithLogger(nil)}, "WithLogger(nil)"},
		{"nil option", []hashedwheel.Option{hashedwheel.WithTicksPerWheel(8), nil}, "option 1 is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm, err := hashedwheel.NewTimer(tt.opts...)
			require.Error(t, err)
			assert.Nil(t, tm)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Contains(t, err.Error(), "hashedwheel: ")
		})
	}
}

func TestLargestTickThatDoesNotOverflowIsAccepted(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(math.MaxInt64/512))
	assert.Equal(t, time.Duration(math.MaxInt64/512), tm.TickDuration())
}

func TestDefaultsAreNettys(t *testing.T) {
	tm := newTimer(t)
	assert.Equal(t, 100*time.Millisecond, tm.TickDuration())
	assert.Equal(t, 512, tm.TicksPerWheel())
	assert.Zero(t, tm.PendingTimeouts())
}

func TestSubMillisecondTickIsRaisedWithAWarning(t *testing.T) {
	logger, logs := newLogger()
	tm := newTimer(t, hashedwheel.WithTickDuration(500*time.Microsecond), hashedwheel.WithLogger(logger))
	assert.Equal(t, time.Millisecond, tm.TickDuration())
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "configured=500µs")
}

func TestLastOptionWins(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTicksPerWheel(8), hashedwheel.WithTicksPerWheel(100),
		hashedwheel.WithTickDuration(time.Second), hashedwheel.WithTickDuration(20*time.Millisecond))
	assert.Equal(t, 128, tm.TicksPerWheel())
	assert.Equal(t, 20*time.Millisecond, tm.TickDuration())
}

func TestNonPositiveMaxPendingMeansUnlimited(t *testing.T) {
	for _, n := range []int64{0, -1, math.MinInt64} {
		tm := newTimer(t, hashedwheel.WithMaxPendingTimeouts(n))
		for range 1000 {
			mustSchedule(t, tm, time.Hour, func() {})
		}
		assert.Equal(t, int64(1000), tm.PendingTimeouts())
		assert.Len(t, tm.Stop(), 1000)
	}
}

func TestTickDurationAndWheelInEffect(t *testing.T) {
	tests := []struct {
		tick      time.Duration
		wheel     int
		wantTick  time.Duration
		wantWheel int
	}{
		{100 * time.Millisecond, 512, 100 * time.Millisecond, 512},
		{time.Nanosecond, 1, time.Millisecond, 1},
		{999 * time.Microsecond, 3, time.Millisecond, 4},
		{time.Millisecond, 513, time.Millisecond, 1024},
		{time.Second, 1 << 20, time.Second, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v,%d", tt.tick, tt.wheel), func(t *testing.T) {
			logger, _ := newLogger()
			tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tt.tick),
				hashedwheel.WithTicksPerWheel(tt.wheel), hashedwheel.WithLogger(logger))
			require.NoError(t, err)
			defer tm.Stop()
			assert.Equal(t, tt.wantTick, tm.TickDuration())
			assert.Equal(t, tt.wantWheel, tm.TicksPerWheel())
		})
	}
}
