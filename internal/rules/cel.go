package rules

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// The variables expressions read: an object's unstructured content, as a
// dynamic map.
const (
	varObject    = "object"
	varOldObject = "oldObject"
)

// newEnv is the CEL environment of an expression over vars: the libraries
// and options of Kubernetes' admission policies (k8s.io/apiserver's base
// environment at 1.37), so that an expression reads as it would in a
// ValidatingAdmissionPolicy, less the authorizer library, which needs a
// request. Each call builds its own: nothing is shared between Compile
// calls. Objects are adapted by a (nil: CEL's default adaptation).
func newEnv(a types.Adapter, vars ...string) (*cel.Env, error) {
	opts := []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
			cel.ValidateHomogeneousAggregateLiterals(),
		),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.TwoVarComprehensions(),
		ext.Lists(ext.ListsVersion(3)),
		library.URLs(),
		library.Regex(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(library.SemverVersion(1)),
		library.Lists(library.ListsVersion(1)),
	}
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.DynType))
	}
	if a != nil {
		opts = append(opts, cel.CustomTypeAdapter(a))
	}
	return cel.NewEnv(opts...)
}

// compile compiles expression expr of field over vars into a program
// whose evaluations are limited to o.costLimit. Its result must be a bool.
func compile(field, expr string, o options, vars ...string) (*program, error) {
	return compileWith(adapter{}, field, expr, o, vars...)
}

// compileWith is compile with objects adapted by a.
func compileWith(a types.Adapter, field, expr string, o options, vars ...string) (*program, error) {
	env, err := newEnv(a, vars...)
	if err != nil {
		return nil, fmt.Errorf("%s: the CEL environment: %w", field, err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, issuesError(field, iss)
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		msg := fmt.Sprintf("the result is %s, want bool", t)
		if t.IsExactType(cel.DynType) {
			msg += ": a value of the object is dyn, compare it (object.spec.paused == true)"
		}
		return nil, &FieldError{Field: field, Line: 1, Column: 1, Msg: msg}
	}
	// Counting the cost as it runs costs several allocations and as much
	// time as a simple expression: it is left out where no object can
	// make the expression cost more than the limit.
	limited := true
	if est, err := env.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizeEstimator{}}); err == nil && est.Max <= o.costLimit {
		limited = false
	}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if limited {
		opts = append(opts,
			cel.CostLimit(o.costLimit),
			cel.CostTracking(&library.CostEstimator{}),
			cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		)
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return nil, &FieldError{Field: field, Msg: err.Error()}
	}
	return &program{field: field, prg: prg, limited: limited}, nil
}

// maxSize bounds the size (characters, bytes, entries, items) of every
// value of an object: none is larger than the API server's largest
// request, the bound Kubernetes estimates CEL's costs with.
const maxSize = uint64(celconfig.MaxRequestSizeBytes)

// sizeEstimator estimates every value of an object, whose size CEL cannot
// know before it runs, at up to maxSize.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxSize}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// issuesError is one FieldError of every issue CEL found in field: at the
// first issue's position, with the others' positions in its message.
func issuesError(field string, iss *cel.Issues) error {
	errs := iss.Errors()
	e := &FieldError{Field: field}
	var msgs []string
	for i, ce := range errs {
		line, col := ce.Location.Line(), ce.Location.Column()+1
		// Expressions have no container (namespace): saying so is noise.
		msg := strings.TrimSuffix(ce.Message, " (in container '')")
		if i == 0 {
			e.Line, e.Column = line, col
			msgs = append(msgs, msg)
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%d:%d: %s", line, col, msg))
	}
	e.Msg = strings.Join(msgs, "; ")
	return e
}
