// Command importgroups checks that every file given imports in at most
// three groups, separated by blank lines and in this order: the standard
// library, third-party modules, this module (-local). goimports -local
// sorts within a group and splits a mixed one, but leaves two groups of one
// kind, or groups out of order, as they are; make lint runs both.
//
//	importgroups -local github.com/kubebridge/kubebridge $(git ls-files '*.go')
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
)

type kind int

const (
	standard kind = iota
	thirdParty
	local
)

func (k kind) String() string {
	return [...]string{"standard library", "third-party", "this module"}[k]
}

func main() {
	localPrefix := flag.String("local", "", "import path prefix of this module")
	flag.Parse()
	if *localPrefix == "" {
		fmt.Fprintln(os.Stderr, "importgroups: -local is required")
		os.Exit(2)
	}
	bad := 0
	for _, file := range flag.Args() {
		problems, err := check(file, *localPrefix)
		if err != nil {
			fmt.Fprintln(os.Stderr, "importgroups: "+err.Error())
			os.Exit(2)
		}
		for _, p := range problems {
			fmt.Println(p)
			bad++
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}

// check returns one line per problem in file's import declarations.
func check(file, localPrefix string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.IMPORT {
			continue
		}
		seen := map[kind]bool{}
		last := kind(-1)
		prevEnd := -1
		var group []kind
		flush := func(line int) {
			if len(group) == 0 {
				return
			}
			k := group[0]
			for _, g := range group[1:] {
				if g != k {
					problems = append(problems, fmt.Sprintf("%s:%d: a group mixes %s and %s imports", file, line, k, g))
					break
				}
			}
			switch {
			case seen[k]:
				problems = append(problems, fmt.Sprintf("%s:%d: a second group of %s imports", file, line, k))
			case k < last:
				problems = append(problems, fmt.Sprintf("%s:%d: %s imports after %s imports", file, line, k, last))
			}
			seen[k], last = true, max(last, k)
			group = nil
		}
		groupLine := 0
		for _, spec := range gen.Specs {
			is := spec.(*ast.ImportSpec)
			start := is.Pos()
			if is.Doc != nil {
				start = is.Doc.Pos()
			}
			line := fset.Position(start).Line
			if prevEnd >= 0 && line > prevEnd+1 {
				flush(groupLine)
			}
			if len(group) == 0 {
				groupLine = line
			}
			path, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, err
			}
			group = append(group, classify(path, localPrefix))
			prevEnd = fset.Position(is.End()).Line
		}
		flush(groupLine)
	}
	return problems, nil
}

func classify(path, localPrefix string) kind {
	switch {
	case path == localPrefix || strings.HasPrefix(path, localPrefix+"/"):
		return local
	case !strings.Contains(strings.SplitN(path, "/", 2)[0], "."):
		return standard
	default:
		return thirdParty
	}
}
