package hashedwheel

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDeadlineCtxIs112Bytes(t *testing.T) {
	// 112 bytes is a size class of its own; one byte more would cost 16.
	assert.Equal(t, uintptr(112), reflect.TypeFor[deadlineCtx]().Size())
}

func TestCtxExtFitsIn64Bytes(t *testing.T) {
	// 64 bytes is a size class; one byte more would cost 16.
	assert.LessOrEqual(t, reflect.TypeFor[ctxExt]().Size(), uintptr(64))
}
