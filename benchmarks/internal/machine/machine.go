// Package machine describes where and when a benchmark program ran: the
// machine, its load, the Go version, the command and the commit. Both
// programs of the benchmarks module put this at the head of their JSON
// report, so that a figure is never read without the machine it came from.
// It reads /proc, so it describes a Linux machine.
package machine

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Info is the head of a report's "meta": when the program ran, the command
// that ran it, and the machine it ran on. A program embeds it first in its
// own meta and adds its own fields after it.
type Info struct {
	Date       string `json:"date"`
	Command    string `json:"command"`
	Go         string `json:"go"`
	OSArch     string `json:"os_arch"`
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
}

// Describe describes this run: now, the command (run, such as
// "cd benchmarks && go run .", followed by this process's arguments, each
// absolute path among them written as pathPlaceholder, and each other
// quoted for the shell where it needs it), the Go version, and the machine.
func Describe(run string) Info {
	cmd := run
	for _, a := range os.Args[1:] {
		w := withoutPath(a)
		if w == a {
			w = shellQuote(a)
		}
		cmd += " " + w
	}
	return Info{
		Date:       time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Command:    cmd,
		Go:         runtime.Version(),
		OSArch:     runtime.GOOS + "/" + runtime.GOARCH,
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
}

// pathPlaceholder stands in a report's command for an absolute path, such
// as the directory of -out "$(mktemp -d)": a report names no directory of
// the machine it ran on.
const pathPlaceholder = "<path>"

// shellQuote returns a as a shell reads it back: as it is if it holds
// nothing the shell would split or expand, else in single quotes.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:=/@%+") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// withoutPath returns the argument a, or its value after "=", as
// pathPlaceholder if it is an absolute path.
func withoutPath(a string) string {
	if filepath.IsAbs(a) {
		return pathPlaceholder
	}
	if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") && filepath.IsAbs(value) {
		return name + "=" + pathPlaceholder
	}
	return a
}

// Commit returns the commit the repository is at, with a note if its
// working tree has changes, or "" when git cannot say. It runs git in the
// current directory, which is the benchmarks module's.
func Commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--", "..").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		commit += " (with uncommitted changes)"
	}
	return commit
}

// LoadAverage returns the 1-minute load average of /proc/loadavg.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b) + " unknown")[0]
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
