package hashedwheel_test

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryExportedIdentifierHasADocComment reads the package as
// pkg.go.dev does (go/doc) and fails for an exported type, function,
// method, variable or constant without a doc comment: a blank line between
// a comment and its declaration detaches the comment, and go vet does not
// tell.
func TestEveryExportedIdentifierHasADocComment(t *testing.T) {
	// The files of a default build, as pkg.go.dev shows it.
	bp, err := build.Default.ImportDir(".", 0)
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/hashedwheel/hashedwheel")
	require.NoError(t, err)

	missing := func(kind, name, comment string) {
		t.Helper()
		assert.NotEmpty(t, strings.TrimSpace(comment), "%s %s has no doc comment", kind, name)
	}
	values := func(kind string, vs []*doc.Value) {
		for _, v := range vs {
			for _, name := range v.Names {
				if ast.IsExported(name) {
					missing(kind, name, v.Doc)
				}
			}
		}
	}
	missing("package", pkg.Name, pkg.Doc)
	values("const", pkg.Consts)
	values("var", pkg.Vars)
	for _, f := range pkg.Funcs {
		missing("func", f.Name, f.Doc)
	}
	for _, typ := range pkg.Types {
		missing("type", typ.Name, typ.Doc)
		values("const", typ.Consts)
		values("var", typ.Vars)
		for _, f := range typ.Funcs {
			missing("func", f.Name, f.Doc)
		}
		for _, m := range typ.Methods {
			missing("method", typ.Name+"."+m.Name, m.Doc)
		}
	}
}
