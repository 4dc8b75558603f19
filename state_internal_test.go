package hashedwheel

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"regexp"
	"strings"
	"testing"
)

// stateRow is one row of the transition table at the top of timeout.go.
type stateRow struct{ from, to, by, function string }

func (r stateRow) String() string { return r.function + ": " + r.from + " → " + r.to }

// readStateTable returns the rows of the transition table in timeout.go.
func readStateTable(t *testing.T) []stateRow {
	t.Helper()
	src, err := os.ReadFile("timeout.go")
	if err != nil {
		t.Fatal(err)
	}
	var rows []stateRow
	inTable := false
	columns := regexp.MustCompile(`\s{2,}`)
	for line := range strings.Lines(string(src)) {
		line = strings.TrimRight(line, "\n")
		cells, ok := strings.CutPrefix(line, "//\t")
		switch {
		case ok && strings.HasPrefix(cells, "from "):
			inTable = true
		case inTable && ok:
			c := columns.Split(strings.TrimSpace(cells), -1)
			if len(c) != 4 {
				t.Fatalf("timeout.go: a table row has %d columns, want 4: %q", len(c), cells)
			}
			rows = append(rows, stateRow{c[0], c[1], c[2], c[3]})
		case inTable:
			return rows
		}
	}
	t.Fatal("timeout.go: no transition table (a line `//\tfrom ...`)")
	return nil
}

// stateWords maps the table's words to the state word's phases and flags.
var stateWords = map[string]int32{
	"unarmed": stUnarmed, "pending": stPending, "cancelled": stCancelled, "expired": stExpired,
	"linked": stLinked, "queued": stQueued, "new": stNew, "busy": stBusy,
	"running": stRunning, "returning": stReturning, "out": stOut,
	"notifies": stNotifies, "notify": stNotify,
}

// flagsOf returns the phase and flags of state word s, without its
// generation.
func flagsOf(s int32) int32 { return s & (genOne - 1) }

// stateChange is a cell of the table, read.
type stateChange struct {
	phase    int32 // -1 if the cell names none
	set      int32 // +flag
	clear    int32 // -flag, or !flag in the from column
	optional int32 // (+flag): set only on the row's condition
}

// applyTo returns state s changed as the to column c says, with those of
// the optional flags that are in opt.
func (c stateChange) applyTo(s int32, opt int32) int32 {
	s = s&^c.clear | c.set
	if c.phase >= 0 {
		s = s&^phaseMask | c.phase
	}
	return s | c.optional&opt
}

func parseStateCell(t *testing.T, cell string) stateChange {
	t.Helper()
	c := stateChange{phase: -1}
	for _, word := range strings.Fields(cell) {
		optional := strings.HasPrefix(word, "(") && strings.HasSuffix(word, ")")
		word = strings.Trim(word, "()")
		sign := word[0]
		if sign == '+' || sign == '-' || sign == '!' {
			word = word[1:]
		} else {
			sign = 0
		}
		v, ok := stateWords[word]
		if !ok {
			t.Fatalf("timeout.go: unknown word %q in the transition table", word)
		}
		switch {
		case sign == 0 && v&phaseMask == v && !optional && word != "":
			c.phase = v
		case optional && sign == '+':
			c.optional |= v
		case sign == '+':
			c.set |= v
		case sign == '-' || sign == '!':
			c.clear |= v
		default:
			t.Fatalf("timeout.go: %q in the transition table", word)
		}
	}
	return c
}

// transition drives one function of the table on a timeout whose state is s.
// cond is whether the row's condition for its optional flags holds.
type transition func(to *Timeout, s int32, cond bool)

// transitions holds how to make each row happen, keyed by the row's function
// or, for a function with several rows, by its function and to column. extra
// are flags set besides the from column's when the row's condition is to
// hold, without those set when it is not to.
var transitions = map[string]struct {
	extra, without int32
	call           transition
}{
	"initArm": {0, 0, func(to *Timeout, _ int32, cond bool) {
		to.initArm(map[bool]int32{true: stNotifies}[cond])
	}},
	"undoInit":                       {0, 0, func(to *Timeout, _ int32, _ bool) { to.undoInit() }},
	"cancel":                         {stLinked | stNotifies, 0, func(to *Timeout, _ int32, _ bool) { to.cancel() }},
	"markCancelled":                  {0, 0, func(to *Timeout, _ int32, _ bool) { to.markCancelled(stLinked | stNew) }},
	"beginReset":                     {0, 0, func(to *Timeout, _ int32, _ bool) { to.beginReset() }},
	"endReset":                       {stPending | stLinked, 0, func(to *Timeout, _ int32, cond bool) { to.endReset(cond) }},
	"takeChange":                     {0, 0, func(to *Timeout, _ int32, _ bool) { to.takeChange() }},
	"markLinked":                     {0, 0, func(to *Timeout, s int32, _ bool) { to.markLinked(s) }},
	"endReturn → -returning +linked": {0, 0, func(to *Timeout, _ int32, _ bool) { to.endReturn() }},
	"endReturn → -returning":         {0, 0, func(to *Timeout, _ int32, _ bool) { to.endReturn() }},
	"clearReturning":                 {0, 0, func(to *Timeout, _ int32, _ bool) { to.clearReturning() }},
	"claim":                          {0, 0, func(to *Timeout, s int32, _ bool) { to.claim(s) }},
	"release":                        {0, 0, func(to *Timeout, _ int32, _ bool) { to.release() }},
	"markExpired → expired -busy -linked +out": {0, 0, func(to *Timeout, s int32, _ bool) {
		to.markExpired(s, false)
	}},
	"markExpired → -linked -busy +running": {0, 0, func(to *Timeout, s int32, _ bool) {
		to.markExpired(s, true)
	}},
	"markReturning":      {0, 0, func(to *Timeout, _ int32, _ bool) { to.markReturning() }},
	"recallRun":          {0, 0, func(to *Timeout, _ int32, _ bool) { to.recallRun() }},
	"letGo":              {0, 0, func(to *Timeout, _ int32, _ bool) { to.letGo(stLinked | stQueued | stNew) }},
	"dropCancelled":      {0, 0, func(to *Timeout, _ int32, _ bool) { to.dropCancelled() }},
	"takeNotify":         {0, 0, func(to *Timeout, _ int32, _ bool) { to.takeNotify() }},
	"endRun → -out":      {0, 0, func(to *Timeout, _ int32, _ bool) { to.endRun() }},
	"endRun → -out +new": {0, 0, func(to *Timeout, _ int32, _ bool) { to.endRun() }},
	"beginArm → +busy +new": {0, 0, func(to *Timeout, _ int32, _ bool) {
		to.beginArm(to.timer.Load())
	}},
	"beginArm → +busy (+new)": {0, stOut, func(to *Timeout, _ int32, _ bool) {
		to.beginArm(to.timer.Load())
	}},
	"endArm": {0, 0, func(to *Timeout, _ int32, cond bool) {
		to.endArm(to.state.Load(), map[bool]int32{true: stNotifies}[cond])
	}},
	"abortArm → -busy -new": {0, 0, func(to *Timeout, _ int32, _ bool) { to.abortArm(true) }},
	"abortArm → -busy":      {0, 0, func(to *Timeout, _ int32, _ bool) { to.abortArm(false) }},
}

// TestStateTransitionsFollowTheTable walks the transition table at the top of
// timeout.go: for each row, it puts a timeout in the row's from state, calls
// the row's function, and checks the state it leaves is the row's to state,
// with the optional flags set exactly when the row's condition holds. Every
// row has a way to drive it here, and every way here has a row.
func TestStateTransitionsFollowTheTable(t *testing.T) {
	tm, err := NewTimer(WithoutWorker())
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Stop()
	rows := readStateTable(t)
	used := map[string]bool{}
	for _, row := range rows {
		from, to := parseStateCell(t, row.from), parseStateCell(t, row.to)
		key := row.function
		if _, ok := transitions[key]; !ok {
			key += " → " + row.to
		}
		drive, ok := transitions[key]
		if !ok {
			t.Errorf("%v: no way to drive this row in the test", row)
			continue
		}
		used[key] = true
		conds := []bool{true}
		if to.optional != 0 {
			conds = []bool{true, false}
		}
		for _, cond := range conds {
			s := from.set
			if from.phase > 0 {
				s |= from.phase
			}
			if cond {
				s |= drive.extra
			} else {
				s |= drive.without
			}
			want := to.applyTo(s, map[bool]int32{true: -1}[cond])
			x := newTimeoutOn(tm)
			x.state.Store(s)
			drive.call(x, s, cond)
			if got := flagsOf(x.state.Load()); got != want {
				t.Errorf("%v (condition %v): state %#x → %#x, want %#x", row, cond, s, got, want)
			}
		}
	}
	for key := range transitions {
		if !used[key] {
			t.Errorf("transition %q has no row in the table of timeout.go", key)
		}
	}
}

// guards maps the functions of the table that check their from state
// themselves to how each decides its optional flags (the ones it sets from
// state s); the others rely on their callers for it (a compare-and-swap from
// the state the caller read, or an And of a flag the caller saw set).
var guards = map[string]func(s int32) (call func(to *Timeout), opt int32){
	"cancel": func(s int32) (func(*Timeout), int32) {
		var opt int32
		if s&stLinked != 0 && s&stQueued == 0 {
			opt |= stQueued
		}
		if s&stNotifies != 0 {
			opt |= stNotify
		}
		return func(to *Timeout) { to.cancel() }, opt
	},
	"markCancelled": func(int32) (func(*Timeout), int32) {
		return func(to *Timeout) { to.markCancelled(stLinked | stNew) }, 0
	},
	"beginReset": func(int32) (func(*Timeout), int32) {
		return func(to *Timeout) { to.beginReset() }, 0
	},
	"markReturning": func(int32) (func(*Timeout), int32) {
		return func(to *Timeout) { to.markReturning() }, 0
	},
	"dropCancelled": func(int32) (func(*Timeout), int32) {
		return func(to *Timeout) { to.dropCancelled() }, 0
	},
}

// TestStateTransitionsHappenOnlyFromTheTable drives each function that
// checks its own from state from every phase with every combination of the
// flags the table names: from a state that a row of the function lists it
// must make that row's change, and from any other it must change nothing.
// So a transition the code makes and the table lacks fails here.
func TestStateTransitionsHappenOnlyFromTheTable(t *testing.T) {
	tm, err := NewTimer(WithoutWorker())
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Stop()
	rows := readStateTable(t)
	flags := []int32{stLinked, stQueued, stNew, stBusy, stRunning, stReturning, stOut, stNotifies, stNotify}
	for function, guard := range guards {
		for _, phase := range []int32{stUnarmed, stPending, stCancelled, stExpired} {
			for combo := range 1 << len(flags) {
				s := phase
				for i, f := range flags {
					if combo&(1<<i) != 0 {
						s |= f
					}
				}
				if s&stBusy != 0 && phase == stPending &&
					(function == "beginReset" && s&stRunning == 0 || function == "markCancelled") {
					continue // it waits for the holder of stBusy, which is no one here
				}
				call, opt := guard(s)
				want := s
				for _, row := range rows {
					from, to := parseStateCell(t, row.from), parseStateCell(t, row.to)
					if row.function != function ||
						from.phase >= 0 && s&phaseMask != from.phase ||
						s&from.set != from.set || s&from.clear != 0 {
						continue
					}
					want = to.applyTo(s, opt)
				}
				x := newTimeoutOn(tm)
				x.state.Store(s)
				call(x)
				if got := flagsOf(x.state.Load()); got != want {
					t.Errorf("%s from %#x: state %#x, want %#x (as the table says)", function, s, got, want)
				}
			}
		}
	}
}

// TestStateWordIsWrittenOnlyInTimeoutGo checks that every write of a
// Timeout's state word (a CompareAndSwap, Store, Swap, And or Or on its state
// field) is in timeout.go, where the transition table lists them.
func TestStateWordIsWrittenOnlyInTimeoutGo(t *testing.T) {
	fset := token.NewFileSet()
	// The package's files under the default build tags.
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/hashedwheel/hashedwheel", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	timeout := pkg.Scope().Lookup("Timeout").Type().Underlying().(*types.Struct)
	var stateField *types.Var
	for field := range timeout.Fields() {
		if field.Name() == "state" {
			stateField = field
		}
	}
	if stateField == nil {
		t.Fatal("Timeout has no field state")
	}
	writes := 0
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch call.Sel.Name {
			case "CompareAndSwap", "Store", "Swap", "And", "Or", "Add":
			default:
				return true
			}
			field, ok := call.X.(*ast.SelectorExpr)
			if !ok || info.Selections[field] == nil || info.Selections[field].Obj() != stateField {
				return true
			}
			writes++
			if pos := fset.Position(call.Pos()); pos.Filename != "timeout.go" {
				t.Errorf("%v: the state word is written outside timeout.go", pos)
			}
			return true
		})
	}
	if writes == 0 {
		t.Error("found no write of the state word at all: the test no longer finds them")
	}
}
