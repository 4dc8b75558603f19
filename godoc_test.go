package hashedwheel_test

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/format"
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
	pkg, _ := exportedDocs(t)
	assert.NotEmpty(t, strings.TrimSpace(pkg.Doc), "package %s has no doc comment", pkg.Name)
	eachExportedDoc(pkg, func(kind, name, comment string) {
		assert.NotEmpty(t, strings.TrimSpace(comment), "%s %s has no doc comment", kind, name)
	})
}

// eachExportedDoc calls f with the kind, the name and the doc comment of
// each exported type, function, method, and group of variables or
// constants (by their exported names) of pkg.
func eachExportedDoc(pkg *doc.Package, f func(kind, name, comment string)) {
	values := func(kind string, vs []*doc.Value) {
		for _, v := range vs {
			var names []string
			for _, name := range v.Names {
				if ast.IsExported(name) {
					names = append(names, name)
				}
			}
			if len(names) > 0 {
				f(kind, strings.Join(names, ", "), v.Doc)
			}
		}
	}
	values("const", pkg.Consts)
	values("var", pkg.Vars)
	for _, fn := range pkg.Funcs {
		f("func", fn.Name, fn.Doc)
	}
	for _, typ := range pkg.Types {
		f("type", typ.Name, typ.Doc)
		values("const", typ.Consts)
		values("var", typ.Vars)
		for _, fn := range typ.Funcs {
			f("func", fn.Name, fn.Doc)
		}
		for _, m := range typ.Methods {
			f("method", typ.Name+"."+m.Name, m.Doc)
		}
	}
}

// maxDocLines is the most lines an exported identifier's doc comment may
// take: its contract (what it does, what it costs, its errors, what it does
// not do, its guarantee and its example). Edge cases belong in
// docs/guarantees.md, internals in docs/design.md.
const maxDocLines = 25

// maxGoDocAllLines bounds what `go doc -all` prints for the package, so
// that the godoc stays a contract one reads through, not a manual.
const maxGoDocAllLines = 650

// exportedDocs parses the files of a default build, as pkg.go.dev and go
// doc show them, and returns the package's doc and its file set.
func exportedDocs(t *testing.T) (*doc.Package, *token.FileSet) {
	t.Helper()
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
	return pkg, fset
}

// docLines returns the number of lines of a doc comment as go/doc gives it.
func docLines(comment string) int {
	comment = strings.TrimRight(comment, "\n")
	if comment == "" {
		return 0
	}
	return strings.Count(comment, "\n") + 1
}

// TestEveryExportedDocCommentIsAtMost25Lines fails for an exported type,
// function, method, variable or constant whose doc comment takes more than
// maxDocLines lines. The package doc is the manual's front page, and is
// bounded by TestGoDocAllIsAtMost650Lines instead.
func TestEveryExportedDocCommentIsAtMost25Lines(t *testing.T) {
	pkg, _ := exportedDocs(t)
	eachExportedDoc(pkg, func(kind, name, comment string) {
		assert.LessOrEqual(t, docLines(comment), maxDocLines,
			"%s %s: its doc comment takes %d lines; keep the contract, move the edge cases to docs/guarantees.md",
			kind, name, docLines(comment))
	})
}

// TestGoDocAllIsAtMost650Lines renders the package as `go doc -all` does
// (go/doc's text printer, four spaces of indent, each declaration printed
// with go/format and without its unexported fields) and fails if the
// output passes maxGoDocAllLines lines.
func TestGoDocAllIsAtMost650Lines(t *testing.T) {
	pkg, fset := exportedDocs(t)
	var out strings.Builder
	text := func(comment, prefix string) {
		if comment == "" {
			return
		}
		pr := pkg.Printer()
		pr.TextPrefix = prefix
		pr.TextCodePrefix = prefix + "    "
		out.Write(pr.Text(pkg.Parser().Parse(comment)))
	}
	emit := func(comment string, node ast.Node) {
		var b strings.Builder
		require.NoError(t, format.Node(&b, fset, node))
		out.WriteString(b.String() + "\n")
		text(comment, "    ")
		out.WriteString("\n")
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			emit(v.Doc, v.Decl)
		}
	}
	out.WriteString("package " + pkg.Name + " // import \"" + pkg.ImportPath + "\"\n\n")
	text(pkg.Doc, "")
	out.WriteString("\n")
	if len(pkg.Consts) > 0 {
		out.WriteString("CONSTANTS\n\n")
		values(pkg.Consts)
	}
	if len(pkg.Vars) > 0 {
		out.WriteString("VARIABLES\n\n")
		values(pkg.Vars)
	}
	if len(pkg.Funcs) > 0 {
		out.WriteString("\nFUNCTIONS\n\n")
		for _, f := range pkg.Funcs {
			emit(f.Doc, f.Decl)
		}
	}
	if len(pkg.Types) > 0 {
		out.WriteString("\nTYPES\n\n")
	}
	for _, typ := range pkg.Types {
		emit(typ.Doc, withoutUnexportedElems(typ.Decl))
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			emit(f.Doc, f.Decl)
		}
		for _, m := range typ.Methods {
			emit(m.Doc, m.Decl)
		}
	}
	lines := strings.Count(out.String(), "\n")
	t.Logf("go doc -all: about %d lines", lines)
	assert.LessOrEqual(t, lines, maxGoDocAllLines,
		"go doc -all takes about %d lines; keep each identifier's contract, move the rest to docs/", lines)
}

// withoutUnexportedElems returns a copy of a type's declaration with the
// unexported fields of a struct, or methods of an interface, replaced by
// the comment go doc prints instead.
func withoutUnexportedElems(decl *ast.GenDecl) *ast.GenDecl {
	d := *decl
	specs := make([]ast.Spec, len(d.Specs))
	for i, s := range d.Specs {
		ts := *s.(*ast.TypeSpec)
		var fields **ast.FieldList
		what := "fields"
		switch typ := ts.Type.(type) {
		case *ast.StructType:
			c := *typ
			ts.Type, fields = &c, &c.Fields
		case *ast.InterfaceType:
			c := *typ
			ts.Type, fields, what = &c, &c.Methods, "methods"
		}
		if fields != nil && *fields != nil {
			kept := &ast.FieldList{Opening: (*fields).Opening, Closing: (*fields).Closing}
			trimmed := false
			for _, f := range (*fields).List {
				exported := len(f.Names) == 0 // an embedded type
				for _, n := range f.Names {
					exported = exported || ast.IsExported(n.Name)
				}
				if exported {
					kept.List = append(kept.List, f)
				} else {
					trimmed = true
				}
			}
			if trimmed {
				kept.List = append(kept.List, &ast.Field{
					Names: []*ast.Ident{ast.NewIdent("// Has unexported " + what + ".")},
				})
			}
			*fields = kept
		}
		specs[i] = &ts
	}
	d.Specs = specs
	return &d
}
