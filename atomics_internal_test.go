package hashedwheel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraryUsesOwnAtomics checks that the library's files (every non-test
// .go file of the package, whatever its build tags) synchronize only through
// the package's own types of atomics_off.go and atomics_on.go, which the
// interleaving explorer sees: none imports sync/atomic or names a type of
// sync other than Pool and OnceValue, which carry no state the explorer
// reasons about. The wrappers themselves are exempt, and so is
// explore_on.go, whose hook is what the wrappers call.
func TestLibraryUsesOwnAtomics(t *testing.T) {
	exempt := map[string]bool{"atomics_off.go": true, "atomics_on.go": true, "explore_on.go": true}
	allowedSync := map[string]bool{"Pool": true, "OnceValue": true}
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || exempt[name] {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		checked++
		syncName := ""
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			switch path {
			case "sync/atomic":
				t.Errorf("%s imports sync/atomic: use the package's atomic types (atomics_off.go)",
					fset.Position(imp.Pos()))
			case "sync":
				syncName = "sync"
				if imp.Name != nil {
					syncName = imp.Name.Name
				}
			}
		}
		if syncName == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == syncName && !allowedSync[sel.Sel.Name] {
				t.Errorf("%s uses sync.%s: use the package's mutex, or its atomic types (atomics_off.go)",
					fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	assert.Greater(t, checked, 10, "the library's files were not found")
}
