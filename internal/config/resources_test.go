package config_test

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebridge/kubebridge/internal/config"
)

// canonical selectors, as the parser stores them.
func lsel(t *testing.T, s string) string {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q): %v", s, err)
	}
	return sel.String()
}

func fsel(t *testing.T, s string) string {
	t.Helper()
	sel, err := fields.ParseSelector(s)
	if err != nil {
		t.Fatalf("fields.ParseSelector(%q): %v", s, err)
	}
	return sel.String()
}

func TestResourcesEnvDecode(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  func(t *testing.T) config.Resources
	}{
		{"empty", "", func(*testing.T) config.Resources { return nil }},
		{"only separators", " ;\n ; \t", func(*testing.T) config.Resources { return nil }},
		{"trailing semicolon", "configmaps;", func(*testing.T) config.Resources {
			return config.Resources{{Name: "configmaps"}}
		}},
		{"leading and doubled separators", ";;configmaps;;\n\npods;", func(*testing.T) config.Resources {
			return config.Resources{{Name: "configmaps"}, {Name: "pods"}}
		}},
		{"full scope", "pods | ns=a,b | labels=app in (web,api),tier!=db | fields=status.phase=Running", func(t *testing.T) config.Resources {
			return config.Resources{{
				Name:          "pods",
				Namespaces:    []string{"a", "b"},
				LabelSelector: lsel(t, "app in (web,api),tier!=db"),
				FieldSelector: fsel(t, "status.phase=Running"),
			}}
		}},
		{"option aliases", "a | namespace=x ; b | namespaces=y ; c | ns=z | l=k=v | f=metadata.name=n", func(t *testing.T) config.Resources {
			return config.Resources{
				{Name: "a", Namespaces: []string{"x"}},
				{Name: "b", Namespaces: []string{"y"}},
				{Name: "c", Namespaces: []string{"z"}, LabelSelector: lsel(t, "k=v"), FieldSelector: fsel(t, "metadata.name=n")},
			}
		}},
		{"options in any order", "pods | fields=spec.nodeName=n1 | labels=app | namespaces=web", func(t *testing.T) config.Resources {
			return config.Resources{{Name: "pods", Namespaces: []string{"web"}, LabelSelector: lsel(t, "app"), FieldSelector: fsel(t, "spec.nodeName=n1")}}
		}},
		{"newline separated", "configmaps\ndeployments.apps | namespaces=web,api\npods | labels=app=web\n", func(t *testing.T) config.Resources {
			return config.Resources{
				{Name: "configmaps"},
				{Name: "deployments.apps", Namespaces: []string{"web", "api"}},
				{Name: "pods", LabelSelector: lsel(t, "app=web")},
			}
		}},
		{"crlf and mixed separators", "configmaps\r\nsecrets; pods\r\n", func(*testing.T) config.Resources {
			return config.Resources{{Name: "configmaps"}, {Name: "secrets"}, {Name: "pods"}}
		}},
		{"whitespace tolerance", "  \tpods  |  ns = a , b  |  l = app = web ,  tier != db  |  f = status.phase=Running \t;  cm  ", func(t *testing.T) config.Resources {
			return config.Resources{
				{Name: "pods", Namespaces: []string{"a", "b"}, LabelSelector: lsel(t, "app=web,tier!=db"), FieldSelector: fsel(t, "status.phase=Running")},
				{Name: "cm"},
			}
		}},
		{"label selector forms", "pods | labels=app,!legacy,env==prod,tier notin (db),version", func(t *testing.T) config.Resources {
			return config.Resources{{Name: "pods", LabelSelector: lsel(t, "app,!legacy,env==prod,tier notin (db),version")}}
		}},
		{"field selector forms", "pods | fields=metadata.name=web,status.phase!=Failed", func(t *testing.T) config.Resources {
			return config.Resources{{Name: "pods", FieldSelector: fsel(t, "metadata.name=web,status.phase!=Failed")}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got config.Resources
			if err := got.EnvDecode(tt.value); err != nil {
				t.Fatalf("EnvDecode(%q): %v", tt.value, err)
			}
			if want := tt.want(t); !reflect.DeepEqual(got, want) {
				t.Errorf("EnvDecode(%q)\n got %#v\nwant %#v", tt.value, got, want)
			}
		})
	}
}

// Names are kept as given, in every form kubectl accepts; resolving them
// is discovery's job.
func TestResourcesNameForms(t *testing.T) {
	names := []string{
		"configmaps", "configmap", "cm", "deploy", "deployments.apps", "deployments.v1.apps",
		"widgets.example.com", "widgets.v1.example.com", "Deployments.Apps", "po",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, value := range []string{name, " " + name + " ", name + " | ns=web", name + ";"} {
				var got config.Resources
				if err := got.EnvDecode(value); err != nil {
					t.Fatalf("EnvDecode(%q): %v", value, err)
				}
				if len(got) != 1 || got[0].Name != name {
					t.Errorf("EnvDecode(%q) = %+v, want one entry named %q", value, got, name)
				}
			}
		})
	}
	// All of them in one variable, through Load.
	c, err := load(env("BRIDGE_RESOURCES", strings.Join(names, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Resources {
		got = append(got, r.Name)
	}
	if !reflect.DeepEqual(got, names) {
		t.Errorf("names = %q, want %q", got, names)
	}
}

func TestResourcesEnvDecodeErrors(t *testing.T) {
	tests := []struct {
		value string
		want  []string // all in the one error, in this order
	}{
		{"config maps", []string{`"config maps": expected a resource name`}},
		{"cm=x", []string{`"cm=x": expected a resource name`}},
		{"cm,secrets", []string{`"cm,secrets": expected a resource name`}},
		{"v1/pods", []string{`"v1/pods": expected a resource name`}},
		{"|ns=a", []string{"expected a resource name"}},
		{"pods | ns", []string{`pods: option "ns" is not key=value`}},
		{"pods | | ns=a", []string{`pods: option "" is not key=value`}},
		{"pods | selector=app", []string{`pods: unknown option "selector"`}},
		{"pods | NS=a", []string{`pods: unknown option "NS"`}},
		{"pods | ns=a | ns=b", []string{"pods: option namespaces given twice"}},
		{"pods | ns=a,Web", []string{`pods: "Web" is not a namespace name`}},
		{"pods | ns=a,,b", []string{`pods: "" is not a namespace name`}},
		{"pods | labels=app in (", []string{`pods: label selector "app in ("`}},
		{"pods | fields=status.phase", []string{`pods: field selector "status.phase"`}},
		{"config maps; pods | x=1\nsecrets | l=(", []string{`"config maps"`, `pods: unknown option "x"`, `secrets: label selector "("`}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			before := config.Resources{{Name: "unchanged"}}
			got := before
			err := got.EnvDecode(tt.value)
			if err == nil {
				t.Fatalf("EnvDecode(%q) = %+v, want an error", tt.value, got)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("error %q: want %q (after earlier parts)", msg, w)
					break
				}
				rest = rest[i+len(w):]
			}
			if !reflect.DeepEqual(got, before) {
				t.Errorf("EnvDecode changed the value on error: %+v", got)
			}
		})
	}
}

// Spaces inside a field selector are not tolerated by the API server
// ("status.phase " is not a field label), unlike spaces in a label
// selector. The parser must either drop them or report the selector; it
// must not accept a selector whose fields or values carry spaces.
func TestResourcesFieldSelectorWhitespace(t *testing.T) {
	for _, value := range []string{
		"pods | fields=status.phase = Running",
		"pods | fields=status.phase=Running, metadata.name=web",
		"pods | fields=status.phase != Failed",
	} {
		t.Run(value, func(t *testing.T) {
			var got config.Resources
			if err := got.EnvDecode(value); err != nil {
				return // reported: fine
			}
			sel, err := fields.ParseSelector(got[0].FieldSelector)
			if err != nil {
				t.Fatalf("stored field selector %q does not parse: %v", got[0].FieldSelector, err)
			}
			for _, r := range sel.Requirements() {
				if r.Field != strings.TrimSpace(r.Field) || r.Value != strings.TrimSpace(r.Value) {
					t.Errorf("EnvDecode(%q) accepted field selector %q with field %q, value %q", value, got[0].FieldSelector, r.Field, r.Value)
				}
			}
		})
	}
}
