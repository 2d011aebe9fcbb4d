package push

import "testing"

func TestPoolCachedBytes(t *testing.T) {
	for _, tc := range []struct {
		p    Pool
		want uint64
	}{
		{Pool{Allocated: 1 << 30, Reserved: 3 << 29}, 1 << 29},
		{Pool{Allocated: 5, Reserved: 5}, 0},
		// Decode refuses allocated > reserved; a hand-built pool must not wrap around.
		{Pool{Allocated: 6, Reserved: 5}, 0},
	} {
		if got := tc.p.CachedBytes(); got != tc.want {
			t.Errorf("%+v.CachedBytes() = %d, want %d", tc.p, got, tc.want)
		}
	}
}
