package hashedwheel_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsLinksAndCommands keeps README.md, CONTRIBUTING.md, CHANGELOG.md and
// docs/*.md honest: every relative link names a file (and heading) that
// exists, and every command in a ```sh block names programs, scripts, tests,
// benchmarks and flags that exist, so that a reader who copies one runs what
// it says. CI runs the commands that are quick (.ci/run); this checks all of
// them against the tree.
func TestDocsLinksAndCommands(t *testing.T) {
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
	more, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	files = append(files, more...)
	names := testNames(t)
	for _, file := range files {
		text, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for _, link := range relativeLinks(string(text)) {
			checkLink(t, file, link)
		}
		for _, cmd := range shellCommands(string(text)) {
			checkCommand(t, file, cmd, names)
		}
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// relativeLinks returns the targets of a markdown text's links that are not
// URLs.
func relativeLinks(text string) []string {
	var links []string
	for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
		if l := m[1]; !strings.Contains(l, "://") && !strings.HasPrefix(l, "mailto:") {
			links = append(links, l)
		}
	}
	return links
}

func checkLink(t *testing.T, from, link string) {
	t.Helper()
	path, anchor, _ := strings.Cut(link, "#")
	target := from
	if path != "" {
		target = filepath.Join(filepath.Dir(from), path)
		if _, err := os.Stat(target); err != nil {
			t.Errorf("%s: link %q: %s does not exist", from, link, target)
			return
		}
	}
	if anchor == "" || !strings.HasSuffix(target, ".md") {
		return
	}
	text, err := os.ReadFile(target)
	require.NoError(t, err)
	for line := range strings.Lines(string(text)) {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") && slug(h) == anchor {
			return
		}
	}
	t.Errorf("%s: link %q: no heading #%s in %s", from, link, anchor, target)
}

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// shellCommands returns the command lines of a markdown text's ```sh
// blocks, without comments.
func shellCommands(text string) []string {
	var cmds []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```sh":
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && line != "":
			if i := strings.Index(line, " # "); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// testNames returns the names of the Test, Benchmark, Fuzz and Example
// functions of the root package and of the examples.
func testNames(t *testing.T) []string {
	var names []string
	paths, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	more, err := filepath.Glob("examples/*/*_test.go")
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	for _, p := range append(paths, more...) {
		src, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
	}
	return names
}

var (
	patternFlagRE = regexp.MustCompile(`-(run|bench|fuzz)[ =](?:'([^']*)'|([^\s'|;&]+))`)
	goRunRE       = regexp.MustCompile(`go run (\./[\w/.-]*|\.)`)
	scriptRE      = regexp.MustCompile(`bash (\.ci/[\w.-]+)`)
	ourFlagRE     = regexp.MustCompile(`\s-(soak|out|quick|rounds|readme|section|render|impl|workload|variants|profiles)\b`)
)

// checkCommand fails if cmd names what does not exist. It knows the commands
// this project's docs use: go test with -run, -bench and -fuzz patterns,
// go run of a package in the tree, the scripts in .ci, go get of this
// module, and cd into a directory of the tree; anything else is an error, so
// that a new kind of command gets a check.
func checkCommand(t *testing.T, file, cmd string, names []string) {
	t.Helper()
	dir := "."
	for part := range strings.SplitSeq(cmd, "&&") {
		part = strings.TrimSpace(part)
		switch {
		case strings.HasPrefix(part, "cd "):
			dir = filepath.Join(dir, strings.TrimSpace(strings.TrimPrefix(part, "cd ")))
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Errorf("%s: %q: no directory %s", file, cmd, dir)
				return
			}
		case strings.HasPrefix(part, "go test"):
			for _, m := range patternFlagRE.FindAllStringSubmatch(part, -1) {
				checkPattern(t, file, cmd, m[1], m[2]+m[3], names)
			}
		case strings.HasPrefix(part, "go run golang.org/x/perf/cmd/benchstat@"),
			strings.HasPrefix(part, "go run honnef.co/go/tools/cmd/staticcheck@"):
			// The tools CI runs, by version.
		case strings.HasPrefix(part, "go run"):
			m := goRunRE.FindStringSubmatch(part)
			if m == nil {
				t.Errorf("%s: %q: go run of a package outside the tree", file, cmd)
				continue
			}
			pkg := filepath.Join(dir, m[1])
			src, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
			if len(src) == 0 {
				t.Errorf("%s: %q: no Go files in %s", file, cmd, pkg)
				continue
			}
			for _, f := range ourFlagRE.FindAllStringSubmatch(part, -1) {
				if !definesFlag(t, pkg, f[1]) {
					t.Errorf("%s: %q: %s defines no flag -%s", file, cmd, pkg, f[1])
				}
			}
		case strings.HasPrefix(part, "bash "):
			m := scriptRE.FindStringSubmatch(part)
			if m == nil {
				t.Errorf("%s: %q: a script outside .ci", file, cmd)
			} else if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
				t.Errorf("%s: %q: no script %s", file, cmd, m[1])
			}
		case strings.HasPrefix(part, "go get github.com/hashedwheel/hashedwheel"):
		default:
			t.Errorf("%s: %q: a command this check does not know; teach it", file, cmd)
		}
	}
}

func checkPattern(t *testing.T, file, cmd, kind, pattern string, names []string) {
	t.Helper()
	if pattern == "^$" || pattern == "." {
		return
	}
	prefix := map[string]string{"run": "", "bench": "Benchmark", "fuzz": "Fuzz"}[kind]
	top, _, _ := strings.Cut(pattern, "/") // sub-benchmarks are not listed
	re, err := regexp.Compile(top)
	if !assert.NoError(t, err, "%s: %q: -%s pattern", file, cmd, kind) {
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && re.MatchString(strings.TrimPrefix(n, prefix)) || strings.HasPrefix(n, prefix) && re.MatchString(n) {
			return
		}
	}
	t.Errorf("%s: %q: -%s %q matches no test", file, cmd, kind, pattern)
}

// definesFlag reports whether the Go files of pkg define the flag name.
func definesFlag(t *testing.T, pkg, name string) bool {
	t.Helper()
	src, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
	for _, f := range src {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(b), `"`+name+`"`) {
			return true
		}
	}
	return false
}

// TestDocsTestingSamplesAreTests checks that each Go sample of
// docs/testing.md is, word for word, a test below, so that it compiles and
// passes.
func TestDocsTestingSamplesAreTests(t *testing.T) {
	doc, err := os.ReadFile("docs/testing.md")
	require.NoError(t, err)
	self, err := os.ReadFile("docs_test.go")
	require.NoError(t, err)
	samples := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, samples)
	for _, s := range samples {
		name, _, _ := strings.Cut(s[1], "(")
		assert.True(t, strings.Contains(string(self), s[1]),
			"docs/testing.md: %s is not, word for word, a test of docs_test.go", name)
	}
}

// TestDocsMigratingSamplesAreCompiled checks that each Go sample of
// docs/migrating.md (each of its blocks between blank lines) is, word for
// word but for the indentation, code of example_test.go or
// migrating_test.go, so that it compiles and runs, and that every test and
// example it names exists.
func TestDocsMigratingSamplesAreCompiled(t *testing.T) {
	doc, err := os.ReadFile("docs/migrating.md")
	require.NoError(t, err)
	var code string
	for _, f := range []string{"example_test.go", "migrating_test.go"} {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		code += unindented(string(src))
	}
	samples := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, samples)
	for _, s := range samples {
		// A sample may show declarations that lie apart in the code, as
		// blocks of its own separated by a blank line.
		for block := range strings.SplitSeq(s[1], "\n\n") {
			first, _, _ := strings.Cut(block, "\n")
			assert.True(t, strings.Contains(code, unindented(block)),
				"docs/migrating.md: the sample that starts %q is not, word for word, code of example_test.go or migrating_test.go", first)
		}
	}
	names := testNames(t)
	for _, m := range regexp.MustCompile("`((?:Test|Example)\\w+)`").FindAllStringSubmatch(string(doc), -1) {
		assert.Contains(t, names, m[1], "docs/migrating.md names a test or example that does not exist")
	}
}

// unindented returns text with the leading tabs and spaces of each line
// removed.
func unindented(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString(strings.TrimLeft(line, " \t"))
	}
	return b.String()
}

func TestIdleSessionIsClosedAfterTwoSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer timer.Stop()

		var closed atomic.Bool
		if _, err := timer.AfterFunc(2*time.Second, func() { closed.Store(true) }); err != nil {
			t.Fatal(err)
		}

		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		if closed.Load() {
			t.Fatal("closed before 2s")
		}
		time.Sleep(timer.TickDuration() + time.Nanosecond) // to 2.01s
		synctest.Wait()
		if !closed.Load() {
			t.Fatal("not closed at the end of the tick that holds 2s")
		}
	})
}

func TestOwnerRunsWhatIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wheel, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(),
			hashedwheel.WithTickDuration(10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer wheel.Stop()

		if _, err := wheel.AfterFunc(25*time.Millisecond, func() {}); err != nil {
			t.Fatal(err)
		}
		at, ok := wheel.NextDeadline()
		if !ok {
			t.Fatal("nothing pending")
		}
		time.Sleep(time.Until(at))
		if n, err := wheel.Advance(time.Now()); n != 1 || err != nil {
			t.Fatalf("Advance ran %d, %v; want 1", n, err)
		}
	})
}

// TestDocsGuaranteesNameTheirTests keeps docs/guarantees.md's lists of the
// tests that hold each guarantee whole: every TestGuaranteeN test is named
// in the section of guarantee N, and every test the file names exists.
func TestDocsGuaranteesNameTheirTests(t *testing.T) {
	text, err := os.ReadFile("docs/guarantees.md")
	require.NoError(t, err)
	sections := map[string]string{}
	var current string
	for line := range strings.Lines(string(text)) {
		if m := regexp.MustCompile(`^### (\d+)\. `).FindStringSubmatch(line); m != nil {
			current = m[1]
		}
		sections[current] += line
	}
	names := testNames(t)
	guarantee := regexp.MustCompile(`^TestGuarantee(\d+)[A-Z]`)
	for _, name := range names {
		if m := guarantee.FindStringSubmatch(name); m != nil && !strings.Contains(sections[m[1]], "`"+name+"`") {
			t.Errorf("docs/guarantees.md: section %s does not name the test %s that holds it", m[1], name)
		}
	}
	for _, m := range regexp.MustCompile("`((?:Test|Fuzz|Example)\\w+)`").FindAllStringSubmatch(string(text), -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("docs/guarantees.md names %s, which is no test", m[1])
		}
	}
}
