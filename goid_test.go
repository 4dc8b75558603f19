package hashedwheel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoroutineIDTellsGoroutinesApart(t *testing.T) {
	id := goroutineID()
	require.NotZero(t, id)
	assert.Equal(t, id, goroutineID())
	other := make(chan uint64)
	go func() { other <- goroutineID() }()
	otherID := <-other
	assert.NotZero(t, otherID)
	assert.NotEqual(t, id, otherID)
}

func TestGoroutineIDParsesOnlyAStackHeader(t *testing.T) {
	for header, want := range map[string]uint64{
		"goroutine 42 [running]:\n": 42,
		"goroutine 7 gp=0x1 m=0":    7,
		"goroutine  [running]":      0,
		"routine 42 [running]":      0,
		"goroutine x42 [running]":   0,
		"":                          0,
	} {
		assert.Equal(t, want, parseGoroutineID([]byte(header)), "header %q", header)
	}
	// The day a Go release changes the header, this fails, and so does
	// NewTimer, rather than a Stop from a task hanging.
	assert.True(t, canReadGoroutineIDs(), "goroutine IDs cannot be read from runtime.Stack")
}
