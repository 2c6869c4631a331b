package rules

import "testing"

// The cost is counted as an expression runs only where an object could
// make it cost more than the limit.
func TestCostCountedOnlyWhereItCanRunOver(t *testing.T) {
	for _, tt := range []struct {
		expr    string
		limit   uint64
		limited bool
	}{
		{"object.spec != oldObject.spec", DefaultCostLimit, false},
		{"object.metadata.labels['tier'] == 'frontend'", DefaultCostLimit, false},
		{"object.metadata.name.matches('^web-')", DefaultCostLimit, false},
		{"object.spec != oldObject.spec", 10, true},
		{"object.spec.containers.all(c, c.image != '')", DefaultCostLimit, true},
		{"object.spec.containers.exists(c, c.env.exists(e, e.name == 'X'))", DefaultCostLimit, true},
		{"object.metadata.name.matches(object.metadata.annotations['re'])", DefaultCostLimit, true},
	} {
		p, err := compileWith(adapter{}, "when", tt.expr, options{costLimit: tt.limit}, varObject, varOldObject)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if p.limited != tt.limited {
			t.Errorf("%s with limit %d: cost counted %v, want %v", tt.expr, tt.limit, p.limited, tt.limited)
		}
	}
}
