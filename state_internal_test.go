package hashedwheel

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"strings"
	"testing"
)

// TestStateWordIsWrittenOnlyInStateGo checks that every write of a
// Timeout's state word (a CompareAndSwap, Store, Swap, And or Or on its state
// field) is in state.go: in lock, unlock, swap and initState, which every
// critical section of the table goes through.
func TestStateWordIsWrittenOnlyInStateGo(t *testing.T) {
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
			if pos := fset.Position(call.Pos()); pos.Filename != "state.go" {
				t.Errorf("%v: the state word is written outside state.go", pos)
			}
			return true
		})
	}
	if writes == 0 {
		t.Error("found no write of the state word at all: the test no longer finds them")
	}
}

// TestScheduleRefusesByWhereTheTimeoutIsHeld walks every phase and held
// value with the Cancelled call owed or not, on the Timeout's own Timer and
// on another, through Timer.refusal: an ended Timeout held nowhere may be
// armed on any Timer; one out on its one-shot run, only on the Timer it ran
// on; one cancelled and still held by its Timer, there (revived), but not
// while a periodic run is out or once a stopping worker has it; a pending
// one, or one whose Cancelled call is owed, nowhere.
func TestScheduleRefusesByWhereTheTimeoutIsHeld(t *testing.T) {
	own, err := NewTimer(WithoutWorker())
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewTimer(WithoutWorker())
	if err != nil {
		t.Fatal(err)
	}
	held := []state{heldNowhere, heldNew, heldBucket, heldBucketAndChanges, heldChanges, heldRun, heldPeriodicRun, heldReturning}
	for _, phase := range []state{stUnarmed, stPending, stCancelled, stExpired} {
		for _, h := range held {
			for _, owed := range []bool{false, true} {
				s := phase | h
				if owed {
					s |= stWantsCancelled | stOwesCancelled
				}
				for _, on := range []*Timer{own, other} {
					var want armRefusal
					switch {
					case phase == stPending:
						want = refusedPending
					case owed:
						want = refusedCallOwed
					case h == heldNowhere:
						want = armable
					case h == heldPeriodicRun:
						want = refusedPeriodicRun
					case h == heldRun && on != own:
						want = refusedRunElsewhere
					case on != own, h == heldChanges:
						want = refusedHeldElsewhere
					case h == heldRun || phase == stCancelled:
						want = armable
					default:
						want = refusedHeldElsewhere
					}
					to := &Timeout{}
					to.timer.Store(own)
					if got := on.refusal(to, s); got != want {
						t.Errorf("state %#x on its %s Timer: refusal %d, want %d",
							uint32(s), map[bool]string{true: "own", false: "another"}[on == own], got, want)
					}
				}
			}
		}
	}
}

// TestInvariantsOfTheStateWord holds assertState to the rules it states: a
// state that breaks one panics, one that keeps them all does not.
func TestInvariantsOfTheStateWord(t *testing.T) {
	for _, tt := range []struct {
		s     state
		valid bool
	}{
		{stUnarmed, true},
		{stUnarmed | heldNew, false},
		{stPending | heldBucket | stWantsCancelled, true},
		{stCancelled | heldBucket, false},
		{stCancelled | heldBucketAndChanges | stWantsCancelled | stOwesCancelled, true},
		{stExpired | heldRun, true},
		{stExpired | heldBucket, false},
		{stPending | heldChanges, false},
		{stCancelled | heldChanges, true},
		{stCancelled | stOwesCancelled, false},
		{stPending | heldNew | stWantsCancelled | stOwesCancelled, false},
		{stPending, false}, // held nowhere
		{stCancelled | heldRun, true},
		{stPending | heldRun, true},
	} {
		func() {
			defer func() {
				if r := recover(); (r == nil) != tt.valid {
					t.Errorf("assertState(%#x): panicked %v, want valid %v", uint32(tt.s), r, tt.valid)
				}
			}()
			assertState(&Timeout{}, tt.s)
		}()
	}
}

// TestStateTableNamesEverySection holds the table of critical sections at
// the top of state.go to the code: every function of the package (the
// default build) that begins a section on a Timeout, by taking its lock
// (lock), swapping its word (swap) or setting its first state (initState),
// is named in the table's last column, and every name there is a method of
// Timer or Timeout. The invariant checks of assert.go, which only look,
// are left out.
func TestStateTableNamesEverySection(t *testing.T) {
	fset := token.NewFileSet()
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	sections := map[string]bool{}
	funcs := map[string]bool{}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if name == "state.go" {
			for _, g := range f.Comments {
				// The table: the indented lines from its header on.
				in := false
				for line := range strings.Lines(g.Text()) {
					switch {
					case strings.HasPrefix(line, "\tby ") && strings.HasSuffix(strings.TrimSpace(line), "function"):
						in = true
					case in && !strings.HasPrefix(line, "\t"):
						in = false
					case in:
						for _, m := range regexp.MustCompile(`\b(Timer|Timeout)\.(\w+)`).FindAllStringSubmatch(line, -1) {
							named[m[1]+"."+m[2]] = true
						}
					}
				}
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			recv := fd.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			id, ok := recv.(*ast.Ident)
			if !ok {
				continue
			}
			full := id.Name + "." + fd.Name.Name
			funcs[full] = true
			if strings.HasPrefix(fd.Name.Name, "assert") || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						switch sel.Sel.Name {
						case "lock", "swap", "initState":
							if fd.Name.Name != "lock" {
								sections[full] = true
							}
						}
					}
				}
				return true
			})
		}
	}
	if len(named) == 0 {
		t.Fatal("no table of critical sections in state.go")
	}
	for f := range sections {
		if !named[f] {
			t.Errorf("%s begins a critical section on a Timeout, but the table in state.go does not name it", f)
		}
	}
	for f := range named {
		if !funcs[f] {
			t.Errorf("the table in state.go names %s, which is no method of the package", f)
		}
	}
}
