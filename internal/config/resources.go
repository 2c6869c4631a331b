package config

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubebridge/kubebridge/internal/rules"
)

// ResourceSpec is one entry of BRIDGE_RESOURCES, or of the resources of the
// configuration file (BRIDGE_CONFIG): a resource type as kubectl names it,
// the scope it is watched in, and its publishing rules.
type ResourceSpec struct {
	// Name is as given: configmaps, cm, deploy.apps, widgets.v1.example.com.
	Name string
	// Namespaces is empty when the entry does not name any; BRIDGE_NAMESPACES
	// then applies.
	Namespaces    []string
	LabelSelector string
	FieldSelector string
	// Rules are the entry's rules as the file gives them (oldObject
	// defaulted to true); the zero Spec for an entry of BRIDGE_RESOURCES,
	// which has none.
	Rules rules.Spec
	// Compiled is Rules compiled, nil when the entry has no rules (no match,
	// ignoreFields or when, patch false, oldObject true). The bridge reads
	// the rules from it: a nil *rules.Rules has none.
	Compiled *rules.Rules
}

// Resources is the parsed BRIDGE_RESOURCES, or the file's resources.
type Resources []ResourceSpec

// EnvDecode parses the variable: entries separated by ';' or newlines, each
// a resource name followed by '|'-separated key=value options:
//
//	configmaps
//	deployments.apps | namespaces=web,api
//	pods | labels=app in (web,api) | fields=status.phase=Running
func (r *Resources) EnvDecode(value string) error {
	var problems []string
	var out Resources
	for _, entry := range strings.FieldsFunc(value, func(c rune) bool { return c == ';' || c == '\n' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		spec, err := parseEntry(entry)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, spec)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	*r = out
	return nil
}

func parseEntry(entry string) (ResourceSpec, error) {
	parts := strings.Split(entry, "|")
	spec := ResourceSpec{Name: strings.TrimSpace(parts[0])}
	if !isResourceName(spec.Name) {
		return spec, fmt.Errorf("%q: expected a resource name such as configmaps, deploy or widgets.example.com first", entry)
	}
	seen := map[string]bool{}
	for _, opt := range parts[1:] {
		key, val, ok := strings.Cut(strings.TrimSpace(opt), "=")
		key = strings.TrimSpace(key)
		val = strings.TrimSpace(val)
		if !ok {
			return spec, fmt.Errorf("%s: option %q is not key=value (keys: namespaces, labels, fields)", spec.Name, strings.TrimSpace(opt))
		}
		canon := map[string]string{"namespaces": "namespaces", "namespace": "namespaces", "ns": "namespaces", "labels": "labels", "l": "labels", "fields": "fields", "f": "fields"}[key]
		if canon == "" {
			return spec, fmt.Errorf("%s: unknown option %q (keys: namespaces, labels, fields)", spec.Name, key)
		}
		if seen[canon] {
			return spec, fmt.Errorf("%s: option %s given twice", spec.Name, canon)
		}
		seen[canon] = true
		var err error
		switch canon {
		case "namespaces":
			spec.Namespaces, err = parseNamespaces(strings.Split(val, ","))
		case "labels":
			spec.LabelSelector, err = parseLabelSelector(val)
		case "fields":
			spec.FieldSelector, err = parseFieldSelector(val)
		}
		if err != nil {
			return spec, fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	return spec, nil
}

// isResourceName reports whether name can be a resource type as kubectl
// names it: configmaps, deploy, widgets.v1.example.com.
func isResourceName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t=,/")
}

// parseNamespaces checks each of nss, trimmed, is a namespace name.
func parseNamespaces(nss []string) ([]string, error) {
	var out []string
	for _, ns := range nss {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("%q is not a namespace name: %s", ns, errs[0])
		}
		out = append(out, ns)
	}
	return out, nil
}

// parseLabelSelector parses a label selector into its canonical form.
func parseLabelSelector(val string) (string, error) {
	sel, err := labels.Parse(val)
	if err != nil {
		return "", fmt.Errorf("label selector %q: %v", val, err)
	}
	return sel.String(), nil
}

// parseFieldSelector parses a field selector into its canonical form.
func parseFieldSelector(val string) (string, error) {
	sel, err := fields.ParseSelector(val)
	if err != nil {
		return "", fmt.Errorf("field selector %q: %v", val, err)
	}
	// Unlike label selectors, field selectors keep spaces around names and
	// values, which the API server then rejects.
	var trimmed []string
	for _, r := range sel.Requirements() {
		trimmed = append(trimmed, strings.TrimSpace(r.Field)+string(r.Operator)+fields.EscapeValue(strings.TrimSpace(r.Value)))
	}
	if sel, err = fields.ParseSelector(strings.Join(trimmed, ",")); err != nil {
		return "", fmt.Errorf("field selector %q: %v", val, err)
	}
	return sel.String(), nil
}
