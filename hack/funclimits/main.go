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

// notProduct are the module's directories that hold no product code: tests on a control plane, build
// and lint tooling, benchmarks' harness and fixtures.
var notProduct = []string{"test", "hack", "bin", "bench", "examples", "docs", "config"}

type limits struct{ lines, params, complexity int }

type finding struct {
	pos  token.Position
	name string
	what string
}

func main() {
	var lim limits
	flag.IntVar(&lim.lines, "max-lines", 60, "longest function body, in lines between its braces")
	flag.IntVar(&lim.params, "max-params", 6, "most parameters a function takes (the receiver not counted)")
	flag.IntVar(&lim.complexity, "max-complexity", 20, "highest cyclomatic complexity (1 + branches + && and ||)")
	root := flag.String("root", ".", "the module's root directory")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: funclimits [flags]\n\nReports product functions (outside %s, tests and generated files) past the limits; exits 1 if any.\n\n", strings.Join(notProduct, ", "))
		flag.PrintDefaults()
	}
	flag.Parse()

	found, err := check(*root, lim)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclimits:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Printf("%s: %s %s\n", f.pos, f.name, f.what)
	}
	if len(found) > 0 {
		fmt.Fprintf(os.Stderr, "funclimits: %d function(s) past the limits (lines %d, params %d, complexity %d)\n", len(found), lim.lines, lim.params, lim.complexity)
		os.Exit(1)
	}
}

// check walks the product's Go files under root; directories holding another module are not walked.
func check(root string, lim limits) ([]finding, error) {
	fset := token.NewFileSet()
	var found []finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return walkInto(root, path, d)
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		if ast.IsGenerated(file) {
			return nil
		}
		found = append(found, checkFile(fset, file, lim)...)
		return nil
	})
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].pos, found[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	return found, err
}

func walkInto(root, path string, d fs.DirEntry) error {
	if path == root {
		return nil
	}
	name := d.Name()
	if strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" {
		return filepath.SkipDir
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return err
	}
	for _, dir := range notProduct {
		if rel == dir {
			return filepath.SkipDir
		}
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

func checkFile(fset *token.FileSet, file *ast.File, lim limits) []finding {
	var found []finding
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := funcName(fn)
		pos := fset.Position(fn.Pos())
		if n := bodyLines(fset, fn.Body); n > lim.lines {
			found = append(found, finding{pos, name, fmt.Sprintf("is %d lines long (limit %d)", n, lim.lines)})
		}
		if n := paramCount(fn.Type); n > lim.params {
			found = append(found, finding{pos, name, fmt.Sprintf("takes %d parameters (limit %d)", n, lim.params)})
		}
		if n := complexity(fn.Body); n > lim.complexity {
			found = append(found, finding{pos, name, fmt.Sprintf("has cyclomatic complexity %d (limit %d)", n, lim.complexity)})
		}
		ast.Inspect(fn.Body, func(node ast.Node) bool {
			if lit, ok := node.(*ast.FuncLit); ok {
				if n := paramCount(lit.Type); n > lim.params {
					found = append(found, finding{fset.Position(lit.Pos()), name + " (func literal)", fmt.Sprintf("takes %d parameters (limit %d)", n, lim.params)})
				}
			}
			return true
		})
	}
	return found
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if idx, ok := t.(*ast.IndexExpr); ok {
		t = idx.X
	}
	if idx, ok := t.(*ast.IndexListExpr); ok {
		t = idx.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// bodyLines counts the lines between the body's braces.
func bodyLines(fset *token.FileSet, body *ast.BlockStmt) int {
	open, end := fset.Position(body.Lbrace).Line, fset.Position(body.Rbrace).Line
	if end-open <= 1 {
		return 0
	}
	return end - open - 1
}

func paramCount(t *ast.FuncType) int {
	n := 0
	for _, field := range t.Params.List {
		if len(field.Names) == 0 {
			n++
		}
		n += len(field.Names)
	}
	return n
}

// complexity is McCabe's number as gocyclo counts it: 1, plus one per if, for, range, non-default case or
// select clause, and && or ||, closures included.
func complexity(body *ast.BlockStmt) int {
	c := 1
	ast.Inspect(body, func(node ast.Node) bool {
		switch n := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
