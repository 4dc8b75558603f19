package machine

import "testing"

// TestWithoutPathHidesAbsolutePaths checks that a report's command keeps
// its flags and relative paths and names no absolute one.
func TestWithoutPathHidesAbsolutePaths(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"-out", "-out"},
		{"../docs", "../docs"},
		{"/tmp/tmp.x1y2", pathPlaceholder},
		{"-out=/tmp/tmp.x1y2", "-out=" + pathPlaceholder},
		{"--profiles=/home/u/p", "--profiles=" + pathPlaceholder},
		{"-out=../docs", "-out=../docs"},
		{"-sessions=1e5", "-sessions=1e5"},
		{"a=/b", "a=/b"}, // not a flag
	} {
		if got := withoutPath(tc.arg); got != tc.want {
			t.Errorf("withoutPath(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
}

// TestShellQuote checks that a report's command quotes an argument the
// shell would split or expand, and only such an argument.
func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"-ticks", "-ticks"},
		{"1ms,10ms,100ms", "1ms,10ms,100ms"},
		{"-out=../docs", "-out=../docs"},
		{"hashedwheel 1f0fbed (no levels)", "'hashedwheel 1f0fbed (no levels)'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
	} {
		if got := shellQuote(tc.arg); got != tc.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
}
