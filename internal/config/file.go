package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/sethvargo/go-envconfig"
	"go.yaml.in/yaml/v3"

	"github.com/kubebridge/kubebridge/internal/rules"
)

// The configuration file's apiVersion and kind: the version of its format
// this bridge reads.
const (
	FileAPIVersion = "kubebridge.io/v1alpha1"
	FileKind       = "BridgeConfiguration"
)

// fileKey is the variable naming the configuration file.
const fileKey = "BRIDGE_CONFIG"

// fileConfig is the configuration file's content (README, The
// configuration file).
type fileConfig struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Resources  []fileResource `yaml:"resources"`
}

// fileResource is one entry of the file's resources.
type fileResource struct {
	Resource      string     `yaml:"resource"`
	Namespaces    []string   `yaml:"namespaces"`
	LabelSelector string     `yaml:"labelSelector"`
	FieldSelector string     `yaml:"fieldSelector"`
	Match         string     `yaml:"match"`
	IgnoreFields  [][]string `yaml:"ignoreFields"`
	When          string     `yaml:"when"`
	Patch         bool       `yaml:"patch"`
	OldObject     *bool      `yaml:"oldObject"`
}

// The fields of each, for the message on an unknown one.
const (
	fileFields     = "apiVersion, kind, resources"
	resourceFields = "resource, namespaces, labelSelector, fieldSelector, match, ignoreFields, when, patch, oldObject"
)

// configFile is the configuration file being read: what its problems say
// first, and where its fields are.
type configFile struct {
	// where is BRIDGE_CONFIG=path.
	where string
	loc   locator
}

// readConfigFile reads and checks the configuration file at path, read by
// read. It returns its resources, each with its rules compiled (every
// entry, those with problems too), where they are (the file and line, for
// a problem), and the problems, one line each.
func readConfigFile(path string, read func(string) ([]byte, error)) (res Resources, where string, problems []string) {
	f := &configFile{where: fileKey + "=" + path}
	data, err := read(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, "", []string{fmt.Sprintf("%s: cannot read the file: %v", f.where, err)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, "", []string{f.yamlProblem(err)}
	}
	if len(root.Content) == 0 {
		return nil, "", []string{fmt.Sprintf("%s: the file is empty: it starts with apiVersion: %s and kind: %s", f.where, FileAPIVersion, FileKind)}
	}
	f.loc.walk(root.Content[0], "", 0)

	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var te *yaml.TypeError
	switch err := dec.Decode(&fc); {
	case errors.As(err, &te):
		for _, msg := range te.Errors {
			problems = append(problems, f.typeProblem(msg))
		}
	case err != nil:
		return nil, "", []string{f.yamlProblem(err)}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		problems = append(problems, f.at(next.Line, "", "a second YAML document: the file holds one"))
	}
	problems = append(problems, f.header(fc)...)
	res = make(Resources, len(fc.Resources))
	for i, r := range fc.Resources {
		var p []string
		res[i], p = f.resource(i, r)
		problems = append(problems, p...)
	}
	return res, f.at(f.loc.line("resources"), "", "resources"), problems
}

// header checks apiVersion and kind.
func (f *configFile) header(fc fileConfig) []string {
	var problems []string
	for _, h := range []struct{ field, got, want string }{
		{"apiVersion", fc.APIVersion, FileAPIVersion},
		{"kind", fc.Kind, FileKind},
	} {
		switch h.got {
		case h.want:
		case "":
			problems = append(problems, f.problem(h.field, fmt.Sprintf("missing: the file starts with apiVersion: %s and kind: %s", FileAPIVersion, FileKind)))
		default:
			problems = append(problems, f.problem(h.field, fmt.Sprintf("%q is not %s, the %s this bridge reads", h.got, h.want, h.field)))
		}
	}
	return problems
}

// resource checks entry i of the file's resources and compiles its rules.
func (f *configFile) resource(i int, r fileResource) (ResourceSpec, []string) {
	pathOf := func(field string) string { return fmt.Sprintf("resources[%d].%s", i, field) }
	spec := ResourceSpec{Name: r.Resource}
	var problems []string
	check := func(field string, err error) {
		if err != nil {
			problems = append(problems, f.problem(pathOf(field), err.Error()))
		}
	}
	switch {
	case r.Resource == "":
		check("resource", errors.New("missing: the type as kubectl names it, e.g. resource: configmaps"))
	case !isResourceName(r.Resource):
		check("resource", fmt.Errorf("%q: expected a resource name such as configmaps, deploy or widgets.example.com", r.Resource))
	}
	var err error
	if len(r.Namespaces) > 0 {
		spec.Namespaces, err = parseNamespaces(r.Namespaces)
		check("namespaces", err)
	}
	if r.LabelSelector != "" {
		spec.LabelSelector, err = parseLabelSelector(r.LabelSelector)
		check("labelSelector", err)
	}
	if r.FieldSelector != "" {
		spec.FieldSelector, err = parseFieldSelector(r.FieldSelector)
		check("fieldSelector", err)
	}
	spec.Rules = rules.Spec{Match: r.Match, IgnoreFields: r.IgnoreFields, When: r.When, Patch: r.Patch, OldObject: r.OldObject == nil || *r.OldObject}
	if !hasRules(spec.Rules) {
		return spec, problems
	}
	spec.Compiled, err = rules.Compile(spec.Rules)
	for _, e := range unjoin(err) {
		var fe *rules.FieldError
		if !errors.As(e, &fe) {
			problems = append(problems, f.problem(fmt.Sprintf("resources[%d]", i), e.Error()))
			continue
		}
		// The field's line, and the rules' own text, which names it.
		problems = append(problems, f.at(f.loc.line(pathOf(fe.Field)), f.loc.describe(fmt.Sprintf("resources[%d]", i)), fe.Error()))
	}
	return spec, problems
}

// hasRules reports whether s differs from no rules at all.
func hasRules(s rules.Spec) bool {
	return s.Match != "" || len(s.IgnoreFields) > 0 || s.When != "" || s.Patch || !s.OldObject
}

// unjoin lists the errors errors.Join made err of, or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// problem is the line saying msg of the field at path: the file, its line,
// the resource and the field.
func (f *configFile) problem(path, msg string) string {
	return f.at(f.loc.line(path), f.loc.describe(path), msg)
}

// at is the line saying msg of what, at line (0: unknown) of the file.
func (f *configFile) at(line int, what, msg string) string {
	s := f.where
	if line > 0 {
		s += ":" + strconv.Itoa(line)
	}
	if what != "" {
		s += ": " + what
	}
	return s + ": " + msg
}

var (
	yamlLineRE     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownFieldRE = regexp.MustCompile(`^field (\S+) not found in type \S+\.(\w+)$`)
)

// yamlProblem is the line reporting a YAML syntax error.
func (f *configFile) yamlProblem(err error) string {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return f.at(line, "", "not YAML: "+m[2])
	}
	return f.at(0, "", "not YAML: "+strings.TrimPrefix(err.Error(), "yaml: "))
}

// typeProblem is the line reporting one of a yaml.TypeError's messages
// ("line 7: field mtach not found in type config.fileResource").
func (f *configFile) typeProblem(msg string) string {
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return f.at(0, "", msg)
	}
	line, _ := strconv.Atoi(m[1])
	if u := unknownFieldRE.FindStringSubmatch(m[2]); u != nil {
		fields := resourceFields
		if u[2] == "fileConfig" {
			fields = fileFields
		}
		return f.at(line, f.loc.describe(f.loc.key(line, u[1])), "unknown field; the fields are "+fields)
	}
	return f.at(line, f.loc.describe(f.loc.innermost(line)), m[2])
}

// readFile reads the configuration file, when BRIDGE_CONFIG names one,
// with read. Its resources replace BRIDGE_RESOURCES, which must then be
// unset. A file with problems and no resources may be the one meant to
// list them: BRIDGE_RESOURCES is then not said to be missing too (it is
// marked bad).
func (c *Config) readFile(lookup envconfig.Lookuper, read func(string) ([]byte, error), bad map[string]bool) []string {
	if c.ConfigFile == "" {
		return nil
	}
	res, where, problems := readConfigFile(c.ConfigFile, read)
	if len(res) == 0 {
		if len(problems) > 0 {
			bad["BRIDGE_RESOURCES"] = true
		}
		return problems
	}
	if v, ok := lookup.Lookup("BRIDGE_RESOURCES"); ok && v != "" {
		return append(problems, "BRIDGE_RESOURCES and "+where+": both list the types to watch: list them in one place, the file's resources or BRIDGE_RESOURCES")
	}
	c.Resources = res
	return problems
}
