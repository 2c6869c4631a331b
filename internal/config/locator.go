package config

import (
	"fmt"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// locator knows where each field of the configuration file is, so that a
// problem found in the decoded file can name its line, and a problem YAML
// reports by line can name its field.
type locator struct {
	spans []span
	// names are the resource names of the file's resources, by index.
	names map[int]string
}

// span is one field (a mapping's key and value) or sequence item.
type span struct {
	// path is the field's path: kind, resources[0].when,
	// resources[0].ignoreFields[1].
	path string
	// key is the mapping key ("" for a sequence item).
	key       string
	from, to  int
	depth     int
	isMapping bool
}

// walk records the fields under n, whose path is path.
func (l *locator) walk(n *yaml.Node, path string, depth int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			l.spans = append(l.spans, span{path: p, key: k.Value, from: k.Line, to: lastLine(v), depth: depth, isMapping: true})
			if k.Value == "resource" && v.Kind == yaml.ScalarNode {
				l.noteName(path, v.Value)
			}
			l.walk(v, p, depth+1)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			l.spans = append(l.spans, span{path: p, from: c.Line, to: lastLine(c), depth: depth})
			l.walk(c, p, depth+1)
		}
	}
}

var resourcePathRE = regexp.MustCompile(`^resources\[(\d+)\](?:\.(.*))?$`)

// noteName records that the resource at path (resources[i]) is name.
func (l *locator) noteName(path, name string) {
	m := resourcePathRE.FindStringSubmatch(path)
	if m == nil || m[2] != "" {
		return
	}
	i, _ := strconv.Atoi(m[1])
	if l.names == nil {
		l.names = map[int]string{}
	}
	l.names[i] = name
}

// lastLine is the last line n starts something on.
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}

// line is the line of the field at path, or of the nearest enclosing one
// that is in the file; 0 if none is.
func (l *locator) line(path string) int {
	for _, s := range l.spans {
		if s.path == path {
			return s.from
		}
	}
	if parent := parentPath(path); parent != path {
		return l.line(parent)
	}
	return 0
}

var parentRE = regexp.MustCompile(`^(.*?)(?:\.[^.\[]*|\[\d+\])$`)

// parentPath is path less its last key or index, "" at the top, and path
// itself when it has no parent.
func parentPath(path string) string {
	if path == "" {
		return path
	}
	if m := parentRE.FindStringSubmatch(path); m != nil {
		return m[1]
	}
	return ""
}

// key is the path of the mapping key named key on line, or key itself.
func (l *locator) key(line int, key string) string {
	best := -1
	for i, s := range l.spans {
		if s.isMapping && s.from == line && s.key == key && (best < 0 || s.depth > l.spans[best].depth) {
			best = i
		}
	}
	if best < 0 {
		return key
	}
	return l.spans[best].path
}

// innermost is the path of the deepest field that line is in, "" if none.
func (l *locator) innermost(line int) string {
	best := -1
	for i, s := range l.spans {
		if s.from <= line && line <= s.to && (best < 0 || s.depth > l.spans[best].depth || (s.depth == l.spans[best].depth && s.from > l.spans[best].from)) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return l.spans[best].path
}

// describe names the field at path for a reader: "resources[0] (pods):
// when" for resources[0].when, "kind" for kind.
func (l *locator) describe(path string) string {
	m := resourcePathRE.FindStringSubmatch(path)
	if m == nil {
		return path
	}
	i, _ := strconv.Atoi(m[1])
	s := "resources[" + m[1] + "]"
	if name := l.names[i]; name != "" {
		s += " (" + name + ")"
	}
	if m[2] != "" {
		s += ": " + m[2]
	}
	return s
}
