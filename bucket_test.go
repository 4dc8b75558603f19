package hashedwheel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOccupancyFindsTheNextNonEmptyBucket(t *testing.T) {
	for _, n := range []int{1, 8, 64, 65, 4096, 1 << 20} {
		o := newOccupancy(n)
		set := map[int]bool{}
		for _, i := range []int{0, 1, 63, 64, 65, 4095, 4096, 262143, 262144, n - 1} {
			if i < n {
				o.add(i)
				set[i] = true
			}
		}
		// Check next from every interesting position against a linear scan.
		for _, from := range []int{0, 1, 2, 62, 63, 64, 65, 66, 4094, 4095, 4096, 4097, 262143, 262144, 262145, n - 1, n} {
			if from > n {
				continue
			}
			want := -1
			for i := from; i < n; i++ {
				if set[i] {
					want = i
					break
				}
			}
			assert.Equal(t, want, o.next(from), "n=%d from=%d", n, from)
		}
		for i := range set {
			o.remove(i)
		}
		assert.Equal(t, -1, o.next(0), "n=%d: not empty after removing all", n)
	}
}
