// Package report holds what the benchmark programs' reports share: the
// files a report is written to (its JSON, its charts and its markdown),
// markdown tables, and numbers as the tables write them.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A Doc is a program's report: the figures of a run, which Save writes as
// JSON and Load reads back, and what is drawn and written from them.
type Doc interface {
	// Charts draws the report's charts into dir.
	Charts(dir string) error
	// Markdown returns the report's markdown: its tables and text.
	Markdown() string
}

// Save writes doc to dir: as indented JSON to name.json, then its charts,
// then its markdown to name.md. The directory must exist.
func Save(dir, name string, doc Doc) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := doc.Charts(dir); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(doc.Markdown()), 0o644)
}

// Load reads the JSON of a report that Save wrote into doc.
func Load(file string, doc any) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// ReplaceBetween replaces what stands between the lines begin and end in the
// file at path (a README's generated table, say) with body, keeping both
// marker lines.
func ReplaceBetween(path, begin, end, body string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q markers", path, begin, end)
	}
	s = s[:i] + begin + "\n" + body + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
