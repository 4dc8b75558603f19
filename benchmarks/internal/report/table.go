package report

import "strings"

// A Column is a column of a markdown table: its title, and whether its
// cells align to the right, as numbers do, or to the left, as names do.
type Column struct {
	Title string
	Right bool
}

// TableHead writes a markdown table's header row and its alignment row.
func TableHead(b *strings.Builder, cols ...Column) {
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" " + c.Title + " |")
	}
	b.WriteString("\n|")
	for _, c := range cols {
		if c.Right {
			b.WriteString("--:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
}

// TableRow writes a row of a markdown table; an empty cell is written as
// "| |".
func TableRow(b *strings.Builder, cells ...string) {
	b.WriteString("|")
	for _, c := range cells {
		if c == "" {
			b.WriteString(" |")
			continue
		}
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}
