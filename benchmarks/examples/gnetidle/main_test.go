package main

import (
	"testing"
	"time"
)

// TestServerPingsAndClosesTheSilentOnly runs the example's server and
// clients on the real clock: the silent client is pinged and closed, never
// before the limit (its timer starts when the server accepts, after the
// dial) and loosely not too late; the talker is echoed and kept open.
func TestServerPingsAndClosesTheSilentOnly(t *testing.T) {
	const limit = 2 * time.Second
	talker, silent, err := run(limit)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("talker: %v; silent: %v", talker, silent)
	if talker.err != nil || talker.echoes == 0 || talker.closedAfter != 0 {
		t.Errorf("talker: %v; want echoes, and still open", talker)
	}
	if silent.err != nil || silent.pings == 0 || silent.echoes != 0 {
		t.Errorf("silent: %v; want a ping (at limit/2) and no echo", silent)
	}
	if late := limit + 5*time.Second; silent.closedAfter < limit || silent.closedAfter > late {
		t.Errorf("silent: closed %v after the dial, want within [%v, %v]", silent.closedAfter, limit, late)
	}
}
