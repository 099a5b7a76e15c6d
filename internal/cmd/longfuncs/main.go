// Command longfuncs lists the functions of the module longer than a limit
// (80 lines: from the func keyword to the closing brace), each with its
// length and whether its doc comment says why it is one piece (the words
// "one piece" in the comment). STYLE.md asks for either a split or that
// reason.
//
//	go run ./internal/cmd/longfuncs [-max 80] [-tests=true] [-all] [DIR]
//
// It prints "file:line name lines [one piece]" for each, longest first, then
// the counts (test and non-test, with and without a reason). Without -all
// only the functions that give no reason are listed. It exits 1 when one
// gives no reason, so a check can run it.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// long is one function over the limit.
type long struct {
	pos      token.Position
	name     string
	lines    int
	test     bool
	onePiece bool
}

func main() {
	limit := flag.Int("max", 80, "the longest a function may be without a reason")
	tests := flag.Bool("tests", true, "include _test.go files")
	all := flag.Bool("all", false, "list the functions that give a reason too")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	found, err := scan(root, *limit, *tests)
	if err != nil {
		fmt.Fprintln(os.Stderr, "longfuncs:", err)
		os.Exit(2)
	}
	var counts [2][2]int // [test][onePiece]
	for _, f := range found {
		counts[b2i(f.test)][b2i(f.onePiece)]++
		if f.onePiece && !*all {
			continue
		}
		mark := ""
		if f.onePiece {
			mark = " (one piece)"
		}
		fmt.Printf("%s:%d %s %d%s\n", f.pos.Filename, f.pos.Line, f.name, f.lines, mark)
	}
	fmt.Printf("over %d lines: %d non-test (%d say why they are one piece), %d test (%d say why)\n",
		*limit, counts[0][0]+counts[0][1], counts[0][1], counts[1][0]+counts[1][1], counts[1][1])
	if counts[0][0]+counts[1][0] > 0 {
		os.Exit(1)
	}
}

// scan parses every .go file under root (skipping testdata, vendor and
// hidden folders) and returns its functions over limit lines, longest first.
func scan(root string, limit int, tests bool) ([]long, error) {
	var found []long
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		isTest := strings.HasSuffix(name, "_test.go")
		if !strings.HasSuffix(name, ".go") || (isTest && !tests) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > limit {
				found = append(found, long{start, funcName(fn), n, isTest,
					fn.Doc != nil && strings.Contains(strings.Join(strings.Fields(fn.Doc.Text()), " "), "one piece")})
			}
		}
		return nil
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	return found, err
}

// funcName is Name or (Recv).Name.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
