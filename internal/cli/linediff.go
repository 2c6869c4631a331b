package cli

import (
	"strings"
)

// diffContext is how many unchanged lines surround a change.
const diffContext = 3

// maxDiffCells bounds the line-matching table; past it the changed middle
// is shown as removed and added in full rather than matched line by line.
const maxDiffCells = 4_000_000

// lineDiff returns a unified-style diff of a and b, line by line: "- "
// for removed lines, "+ " for added ones, "  " for context, "…" between
// hunks. It is empty when a equals b.
func lineDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	// Common head and tail need no matching.
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	if pre == len(x) && pre == len(y) {
		return ""
	}
	ops := make([]diffOp, 0, len(x)+len(y))
	for _, l := range x[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ops = append(ops, matchLines(x[pre:len(x)-suf], y[pre:len(y)-suf])...)
	for _, l := range x[len(x)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return render(ops)
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// matchLines diffs x and y by their longest common subsequence.
func matchLines(x, y []string) []diffOp {
	if len(x)*len(y) > maxDiffCells || len(x) == 0 || len(y) == 0 {
		ops := make([]diffOp, 0, len(x)+len(y))
		for _, l := range x {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range y {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	w := len(y) + 1
	lcs := make([]int32, (len(x)+1)*w)
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i]})
			i, j = i+1, j+1
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, diffOp{'-', x[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		ops = append(ops, diffOp{'-', x[i]})
	}
	for ; j < len(y); j++ {
		ops = append(ops, diffOp{'+', y[j]})
	}
	return ops
}

// render prints the changes with diffContext lines of context around
// each, and "…" where unchanged lines are left out.
func render(ops []diffOp) string {
	keep := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind == ' ' {
			continue
		}
		for k := max(0, i-diffContext); k <= min(len(ops)-1, i+diffContext); k++ {
			keep[k] = true
		}
	}
	var b strings.Builder
	skipped := false
	for i, op := range ops {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped {
			b.WriteString("…\n")
		}
		skipped = false
		b.WriteByte(op.kind)
		b.WriteByte(' ')
		b.WriteString(op.line)
		b.WriteByte('\n')
	}
	if skipped {
		b.WriteString("…\n")
	}
	return b.String()
}
