package rules_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/kubebridge/kubebridge/internal/rules"
)

func compile(t *testing.T, spec rules.Spec, opts ...rules.Option) *rules.Rules {
	t.Helper()
	r, err := rules.Compile(spec, opts...)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", spec, err)
	}
	return r
}

func pod(labels map[string]any, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-1", "namespace": "shop", "resourceVersion": "7", "labels": labels},
		"spec":     spec,
		"status":   map[string]any{"phase": "Running"},
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		spec rules.Spec
		// want are the FieldErrors' texts, in order.
		want []string
	}{
		{"syntax error", rules.Spec{OldObject: true, Match: "object.metadata.name == "}, []string{"match: 1:25: Syntax error: "}},
		{"syntax error on a later line", rules.Spec{OldObject: true, When: "object.spec != oldObject.spec &&\n  object.spec.(x)"}, []string{"when: 2:15: Syntax error: "}},
		{"undeclared variable", rules.Spec{OldObject: true, When: "object.spec != oldObjct.spec"}, []string{"when: 1:16: undeclared reference to 'oldObjct'"}},
		{"oldObject in match", rules.Spec{OldObject: true, Match: "object.spec == oldObject.spec"}, []string{"match: 1:16: undeclared reference to 'oldObject'"}},
		{"string result", rules.Spec{OldObject: true, Match: "object.metadata.name + 'x' == 'y' ? 'a' : 'b'"}, []string{"match: 1:1: the result is string, want bool"}},
		{"int result", rules.Spec{OldObject: true, When: "size(object.spec)"}, []string{"when: 1:1: the result is int, want bool"}},
		{"dyn result", rules.Spec{OldObject: true, Match: "object.spec.paused"}, []string{"match: 1:1: the result is dyn, want bool: a value of the object is dyn, compare it (object.spec.paused == true)"}},
		{"unknown function", rules.Spec{OldObject: true, Match: "object.metadata.name.frobnicate()"}, []string{"match: 1:32: undeclared reference to 'frobnicate'"}},
		{"oldObject false without patch", rules.Spec{OldObject: false}, []string{"oldObject: false needs patch: true"}},
		{"empty path", rules.Spec{OldObject: true, IgnoreFields: [][]string{{"status"}, {}}}, []string{"ignoreFields[1]: empty path"}},
		{"empty key", rules.Spec{OldObject: true, IgnoreFields: [][]string{{"metadata", ""}}}, []string{`ignoreFields[0]: key 2 of ["metadata" ""] is empty`}},
		{"identity", rules.Spec{OldObject: true, IgnoreFields: [][]string{{"metadata"}, {"metadata", "resourceVersion"}, {"kind"}, {"metadata", "labels"}}}, []string{
			`ignoreFields[0]: ["metadata"] would remove metadata.name`,
			`ignoreFields[1]: ["metadata" "resourceVersion"] would remove metadata.resourceVersion`,
			`ignoreFields[2]: ["kind"] would remove kind`,
		}},
		{"all at once", rules.Spec{Match: "1", When: "object.x ==", IgnoreFields: [][]string{nil}}, []string{
			"match: 1:1: the result is int, want bool",
			"when: 1:12: Syntax error: ",
			"ignoreFields[0]: empty path",
			"oldObject: false needs patch: true",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := rules.Compile(tt.spec)
			if err == nil {
				t.Fatalf("Compile succeeded (%v), want an error", r)
			}
			if r != nil {
				t.Errorf("Compile returned rules with its error")
			}
			if !errors.Is(err, rules.ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
			}
			var errs []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			} else {
				errs = []error{err}
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(errs), len(tt.want), err)
			}
			for i, e := range errs {
				var fe *rules.FieldError
				if !errors.As(e, &fe) {
					t.Errorf("error %d is %T, want *rules.FieldError: %v", i, e, e)
				}
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %d = %q, want it to start with %q", i, e, tt.want[i])
				}
				if strings.ContainsAny(e.Error(), "\n\r") {
					t.Errorf("error %d spans several lines: %q", i, e)
				}
			}
		})
	}
}

func TestCompileValid(t *testing.T) {
	for _, spec := range []rules.Spec{
		{OldObject: true},
		{OldObject: false, Patch: true},
		{OldObject: true, Match: "object.metadata.labels['tier'] == 'frontend'"},
		{OldObject: true, When: "object.spec != oldObject.spec"},
		{OldObject: true, IgnoreFields: [][]string{{"status"}, {"metadata", "annotations", "example.com/heartbeat"}}},
		// The Kubernetes libraries: regex, lists, quantity, url, strings,
		// sets, optionals.
		{OldObject: true, Match: "object.metadata.name.matches('^web-[0-9]+$')"},
		{OldObject: true, Match: "[1, 2, 3].isSorted() && sets.contains([1, 2], [1])"},
		{OldObject: true, Match: "quantity('500m').isLessThan(quantity('1'))"},
		{OldObject: true, Match: "url('https://example.com/x').getHost() == 'example.com'"},
		{OldObject: true, Match: "'a,b'.split(',').size() == 2 && object.metadata.?labels.orValue({}).size() >= 0"},
	} {
		if _, err := rules.Compile(spec); err != nil {
			t.Errorf("Compile(%+v): %v", spec, err)
		}
	}
}

func TestCompileOptions(t *testing.T) {
	if _, err := rules.Compile(rules.Spec{OldObject: true}, rules.WithCostLimit(0)); err == nil {
		t.Error("WithCostLimit(0) accepted")
	}
	if _, err := rules.Compile(rules.Spec{OldObject: true}, rules.WithCostLimit(1)); err != nil {
		t.Errorf("WithCostLimit(1): %v", err)
	}
}

func TestSpec(t *testing.T) {
	var none *rules.Rules
	if got := none.Spec(); !got.OldObject || got.Patch || got.Match != "" || got.When != "" || got.IgnoreFields != nil {
		t.Errorf("nil Rules' Spec() = %+v, want only OldObject", got)
	}
	spec := rules.Spec{Match: "true", When: "false", IgnoreFields: [][]string{{"status"}}, Patch: true}
	r := compile(t, spec)
	if got := r.Spec(); got.Match != spec.Match || got.When != spec.When || got.Patch != spec.Patch || got.OldObject || len(got.IgnoreFields) != 1 {
		t.Errorf("Spec() = %+v, want %+v", got, spec)
	}
}

func TestMatches(t *testing.T) {
	r := compile(t, rules.Spec{OldObject: true, Match: "object.metadata.labels['tier'] == 'frontend'"})
	for _, tt := range []struct {
		tier string
		want bool
	}{{"frontend", true}, {"backend", false}} {
		got, err := r.Matches(pod(map[string]any{"tier": tt.tier}, nil))
		if err != nil || got != tt.want {
			t.Errorf("tier %s: Matches = %v, %v; want %v, nil", tt.tier, got, err, tt.want)
		}
	}
	var none *rules.Rules
	if got, err := none.Matches(pod(nil, nil)); !got || err != nil {
		t.Errorf("nil Rules: Matches = %v, %v; want true, nil", got, err)
	}
	noMatch := compile(t, rules.Spec{OldObject: true, When: "false"})
	if got, err := noMatch.Matches(pod(nil, nil)); !got || err != nil {
		t.Errorf("no match: Matches = %v, %v; want true, nil", got, err)
	}
}

func TestPublishes(t *testing.T) {
	r := compile(t, rules.Spec{OldObject: true, When: "object.spec != oldObject.spec"})
	spec := map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:1"}}}
	sameSpec := map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:1"}}}
	newSpec := map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:2"}}}
	old := pod(nil, spec)
	statusOnly := pod(nil, sameSpec)
	statusOnly["status"] = map[string]any{"phase": "Succeeded"}
	if got, err := r.Publishes(statusOnly, old); got || err != nil {
		t.Errorf("status change: Publishes = %v, %v; want false, nil", got, err)
	}
	if got, err := r.Publishes(pod(nil, newSpec), old); !got || err != nil {
		t.Errorf("spec change: Publishes = %v, %v; want true, nil", got, err)
	}
	var none *rules.Rules
	if got, err := none.Publishes(statusOnly, old); !got || err != nil {
		t.Errorf("nil Rules: Publishes = %v, %v; want true, nil", got, err)
	}
	noWhen := compile(t, rules.Spec{OldObject: true, Match: "false"})
	if got, err := noWhen.Publishes(statusOnly, old); !got || err != nil {
		t.Errorf("no when: Publishes = %v, %v; want true, nil", got, err)
	}
}

// An expression that fails on an object answers true, with an error.
func TestFailOpen(t *testing.T) {
	r := compile(t, rules.Spec{OldObject: true,
		Match: "object.metadata.labels['missing'] == 'x'",
		When:  "object.metadata.labels['missing'] != oldObject.metadata.labels['missing']",
	})
	obj := pod(map[string]any{"tier": "web"}, nil)
	got, err := r.Matches(obj)
	if !got || err == nil {
		t.Fatalf("Matches = %v, %v; want true and an error", got, err)
	}
	if !errors.Is(err, rules.ErrEval) || !strings.Contains(err.Error(), "no such key") || !strings.Contains(err.Error(), "match") {
		t.Errorf("Matches error = %v; want ErrEval naming match and saying no such key", err)
	}
	got, err = r.Publishes(obj, obj)
	if !got || !errors.Is(err, rules.ErrEval) || !strings.Contains(err.Error(), "when") {
		t.Errorf("Publishes = %v, %v; want true and ErrEval naming when", got, err)
	}
	// The README's way to read a label that may be missing.
	r = compile(t, rules.Spec{OldObject: true, Match: "object.metadata.?labels.?missing.orValue('') == ''"})
	if got, err := r.Matches(obj); !got || err != nil {
		t.Errorf("optional label: Matches = %v, %v; want true, nil", got, err)
	}
	// A value of the wrong type at run time.
	r = compile(t, rules.Spec{OldObject: true, Match: "object.spec.replicas > 2"})
	if got, err := r.Matches(pod(nil, map[string]any{"replicas": "three"})); !got || !errors.Is(err, rules.ErrEval) {
		t.Errorf("string replicas: Matches = %v, %v; want true and ErrEval", got, err)
	}
	if got, err := r.Matches(pod(nil, map[string]any{"replicas": int64(1)})); got || err != nil {
		t.Errorf("replicas 1: Matches = %v, %v; want false, nil", got, err)
	}
}

// items is an object with a list of n strings.
func items(n int) map[string]any {
	l := make([]any, n)
	for i := range l {
		l[i] = strings.Repeat("x", i%7)
	}
	return map[string]any{"metadata": map[string]any{"name": "big"}, "items": l}
}

func TestCostLimit(t *testing.T) {
	const expr = "object.items.all(x, x.size() < 10)"
	obj := items(1000)
	if got, err := compile(t, rules.Spec{OldObject: true, Match: expr}).Matches(obj); !got || err != nil {
		t.Fatalf("default limit: Matches = %v, %v; want true, nil", got, err)
	}
	r := compile(t, rules.Spec{OldObject: true, Match: "!(" + expr + ")", When: "!(" + expr + ")"}, rules.WithCostLimit(100))
	got, err := r.Matches(obj)
	if !got || !errors.Is(err, rules.ErrEval) || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Errorf("limit 100: Matches = %v, %v; want true and an error saying cost limit exceeded", got, err)
	}
	if got, err := r.Publishes(obj, obj); !got || !errors.Is(err, rules.ErrEval) {
		t.Errorf("limit 100: Publishes = %v, %v; want true and ErrEval", got, err)
	}
	// Under the same limit, a small object passes.
	if got, err := r.Matches(items(3)); got || err != nil {
		t.Errorf("limit 100, 3 items: Matches = %v, %v; want false, nil", got, err)
	}

	// The default limit stops a quadratic walk of 2,000 items (4 million
	// steps).
	quadratic := compile(t, rules.Spec{OldObject: true, Match: "object.items.all(x, object.items.all(y, y != x + 'z'))"})
	if got, err := quadratic.Matches(items(2000)); !got || !errors.Is(err, rules.ErrEval) || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Errorf("quadratic under DefaultCostLimit: Matches = %v, %v; want true and a cost error", got, err)
	}
}

func TestConcurrentEvaluation(t *testing.T) {
	r := compile(t, rules.Spec{OldObject: true, Match: "object.metadata.labels['tier'] == 'frontend'", When: "object.spec != oldObject.spec"})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				tier := []string{"frontend", "backend"}[(g+i)%2]
				obj := pod(map[string]any{"tier": tier}, map[string]any{"n": int64(i)})
				old := pod(map[string]any{"tier": tier}, map[string]any{"n": int64(i % 3)})
				m, err := r.Matches(obj)
				p, err2 := r.Publishes(obj, old)
				if err != nil || err2 != nil || m != (tier == "frontend") || p != (i != i%3) {
					errs <- "wrong answer"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
