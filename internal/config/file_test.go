package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/rules"
)

// issueExample is the configuration file of issue 34, as the README shows it.
const issueExample = `apiVersion: kubebridge.io/v1alpha1
kind: BridgeConfiguration
resources:
- resource: pods                  # as in BRIDGE_RESOURCES
  namespaces: [team-a, team-b]
  labelSelector: "app=web"
  fieldSelector: "status.phase!=Succeeded"
  match: "object.metadata.labels['tier'] == 'frontend'"
  ignoreFields:
  - [status]
  - [metadata, annotations, "example.com/heartbeat"]
  when: "object.spec != oldObject.spec"
  patch: true
  oldObject: false
- resource: configmaps
`

// configFile writes content to a file and returns its path.
func configFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fileEnv is an environment with BRIDGE_CONFIG naming a file of content
// and no BRIDGE_RESOURCES, plus the given key, value pairs.
func fileEnv(t *testing.T, content string, kv ...string) map[string]string {
	t.Helper()
	m := env(kv...)
	delete(m, "BRIDGE_RESOURCES")
	m["BRIDGE_CONFIG"] = configFile(t, content)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestConfigFile(t *testing.T) {
	m := fileEnv(t, issueExample)
	c, err := load(m)
	if err != nil {
		t.Fatal(err)
	}
	if c.ConfigFile != m["BRIDGE_CONFIG"] {
		t.Errorf("ConfigFile = %q, want %q", c.ConfigFile, m["BRIDGE_CONFIG"])
	}
	if len(c.Resources) != 2 {
		t.Fatalf("Resources = %+v, want pods and configmaps", c.Resources)
	}
	pods, cms := c.Resources[0], c.Resources[1]
	wantRules := rules.Spec{
		Match:        "object.metadata.labels['tier'] == 'frontend'",
		IgnoreFields: [][]string{{"status"}, {"metadata", "annotations", "example.com/heartbeat"}},
		When:         "object.spec != oldObject.spec",
		Patch:        true,
		OldObject:    false,
	}
	if pods.Name != "pods" || !reflect.DeepEqual(pods.Namespaces, []string{"team-a", "team-b"}) ||
		pods.LabelSelector != "app=web" || pods.FieldSelector != "status.phase!=Succeeded" || !reflect.DeepEqual(pods.Rules, wantRules) {
		t.Errorf("pods = %+v", pods)
	}
	if pods.Compiled == nil || !reflect.DeepEqual(pods.Compiled.Spec(), wantRules) {
		t.Fatalf("pods' Compiled = %v, want the rules compiled", pods.Compiled)
	}
	// The compiled rules are the file's.
	obj := map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "frontend"}, "annotations": map[string]any{"example.com/heartbeat": "1"}}, "spec": map[string]any{}, "status": map[string]any{}}
	if ok, err := pods.Compiled.Matches(obj); !ok || err != nil {
		t.Errorf("Matches = %v, %v; want true", ok, err)
	}
	pods.Compiled.Project(obj)
	if _, ok := obj["status"]; ok {
		t.Errorf("Project kept status")
	}
	wantCMs := config.ResourceSpec{Name: "configmaps", Rules: rules.Spec{OldObject: true}}
	if !reflect.DeepEqual(cms, wantCMs) {
		t.Errorf("configmaps = %+v, want %+v (no rules, nothing compiled)", cms, wantCMs)
	}
}

func TestConfigFileScopeAsInTheEnvironment(t *testing.T) {
	c, err := load(fileEnv(t, `apiVersion: kubebridge.io/v1alpha1
kind: BridgeConfiguration
resources:
- resource: deploy.apps
  namespaces: [" web", api]
  labelSelector: "app in ( web , api )"
  fieldSelector: " status.phase = Running "
`))
	if err != nil {
		t.Fatal(err)
	}
	fromEnv, err := load(env("BRIDGE_RESOURCES", "deploy.apps | namespaces= web,api | labels=app in ( web , api ) | fields= status.phase = Running "))
	if err != nil {
		t.Fatal(err)
	}
	want := fromEnv.Resources[0]
	want.Rules = rules.Spec{OldObject: true}
	if !reflect.DeepEqual(c.Resources[0], want) {
		t.Errorf("from the file: %+v; from BRIDGE_RESOURCES: %+v", c.Resources[0], want)
	}
}

func TestConfigFileWithoutResources(t *testing.T) {
	content := "apiVersion: kubebridge.io/v1alpha1\nkind: BridgeConfiguration\n"
	c, err := load(fileEnv(t, content, "BRIDGE_RESOURCES", "configmaps; pods"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Resources) != 2 || c.Resources[1].Name != "pods" || c.Resources[1].Compiled != nil {
		t.Errorf("Resources = %+v, want BRIDGE_RESOURCES'", c.Resources)
	}
	// Then BRIDGE_RESOURCES is still required.
	checkProblems(t, loadErr(load(fileEnv(t, content))), []want{p("BRIDGE_RESOURCES", "required", "BRIDGE_CONFIG")})
}

func loadErr(_ *config.Config, err error) error { return err }

func mapLookup(m map[string]string) envconfig.Lookuper { return envconfig.MapLookuper(m) }

// Every bad input of issue 34 gives one line naming the file, the line,
// the resource, the field and, for CEL, the position in the expression.
func TestConfigFileProblems(t *testing.T) {
	const head = "apiVersion: kubebridge.io/v1alpha1\nkind: BridgeConfiguration\nresources:\n"
	tests := []struct {
		name    string
		content string
		env     []string
		// subs the one problem line contains, after BRIDGE_CONFIG=<path>.
		subs []string
	}{
		{"unknown field", head + "- resource: pods\n  mtach: \"true\"\n", nil,
			[]string{":5: resources[0] (pods): mtach: unknown field; the fields are resource, namespaces"}},
		{"unknown top-level field", "apiVersion: kubebridge.io/v1alpha1\nkind: BridgeConfiguration\nresource:\n- resource: pods\n", nil,
			[]string{":3: resource: unknown field; the fields are apiVersion, kind, resources"}},
		{"wrong apiVersion", "apiVersion: kubebridge.io/v1\nkind: BridgeConfiguration\nresources:\n- resource: pods\n", nil,
			[]string{`:1: apiVersion: "kubebridge.io/v1" is not kubebridge.io/v1alpha1`}},
		{"wrong kind", "apiVersion: kubebridge.io/v1alpha1\nkind: Configuration\nresources:\n- resource: pods\n", nil,
			[]string{`:2: kind: "Configuration" is not BridgeConfiguration`}},
		{"missing apiVersion and kind", "resources:\n- resource: pods\n", nil,
			[]string{": apiVersion: missing", ": kind: missing"}},
		{"CEL syntax error", head + "- resource: pods\n- resource: configmaps\n  when: \"object.data != oldObject.data &&\"\n", nil,
			[]string{":6: resources[1] (configmaps): when: 1:33: Syntax error: mismatched input '<EOF>'"}},
		{"non-boolean expression", head + "- resource: pods\n  match: \"object.metadata.name\"\n", nil,
			[]string{":5: resources[0] (pods): match: 1:1: the result is dyn, want bool"}},
		{"undeclared variable", head + "- resource: pods\n  when: object.spec != oldObjct.spec\n", nil,
			[]string{":5: resources[0] (pods): when: 1:16: undeclared reference to 'oldObjct'"}},
		{"oldObject false without patch", head + "- resource: pods\n  oldObject: false\n", nil,
			[]string{":5: resources[0] (pods): oldObject: false needs patch: true"}},
		{"empty path in ignoreFields", head + "- resource: pods\n  ignoreFields:\n  - [status]\n  - []\n", nil,
			[]string{":7: resources[0] (pods): ignoreFields[1]: empty path"}},
		{"empty key in ignoreFields", head + "- resource: pods\n  ignoreFields: [[metadata, \"\"]]\n", nil,
			[]string{":5: resources[0] (pods): ignoreFields[0]: key 2"}},
		{"both BRIDGE_RESOURCES and a file", head + "- resource: pods\n", []string{"BRIDGE_RESOURCES", "configmaps"},
			[]string{"BRIDGE_RESOURCES and BRIDGE_CONFIG=", ":3: resources: both list the types to watch"}},
		{"wrong type", head + "- resource: pods\n  patch: yes please\n", nil,
			[]string{":5: resources[0] (pods): patch: cannot unmarshal !!str `yes please` into bool"}},
		{"ignoreFields as a string", head + "- resource: pods\n  ignoreFields: status\n", nil,
			[]string{":5: resources[0] (pods): ignoreFields: cannot unmarshal !!str `status` into [][]string"}},
		{"not YAML", head + "- resource: pods\n   match: x\n", nil,
			[]string{":5: not YAML: "}},
		{"empty file", "", nil, []string{": the file is empty"}},
		{"two documents", head + "- resource: pods\n---\nkind: x\n", nil, []string{":5: a second YAML document"}},
		{"missing resource name", head + "- namespaces: [a]\n", nil, []string{":4: resources[0]: resource: missing"}},
		{"bad resource name", head + "- resource: config maps\n", nil, []string{`:4: resources[0] (config maps): resource: "config maps": expected a resource name`}},
		{"bad namespace", head + "- resource: pods\n  namespaces: [Team_A]\n", nil, []string{`:5: resources[0] (pods): namespaces: "Team_A" is not a namespace name`}},
		{"bad label selector", head + "- resource: pods\n  labelSelector: app in (web\n", nil, []string{`:5: resources[0] (pods): labelSelector: label selector "app in (web"`}},
		{"bad field selector", head + "- resource: pods\n  fieldSelector: status.phase\n", nil, []string{`:5: resources[0] (pods): fieldSelector: field selector "status.phase"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fileEnv(t, tt.content, tt.env...)
			_, err := load(m)
			var wants []want
			for _, sub := range tt.subs {
				wants = append(wants, p("BRIDGE_CONFIG", "BRIDGE_CONFIG="+m["BRIDGE_CONFIG"]+sub))
			}
			if len(tt.env) > 0 { // both: the line is BRIDGE_RESOURCES'
				wants = []want{p("BRIDGE_RESOURCES", tt.subs...)}
			}
			checkProblems(t, err, wants)
		})
	}
}

func TestConfigFileUnreadable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := load(map[string]string{"BRIDGE_CONFIG": missing})
	// One line: BRIDGE_RESOURCES may be unset for the file's resources.
	checkProblems(t, err, []want{p("BRIDGE_CONFIG", "BRIDGE_CONFIG="+missing+": cannot read the file: no such file or directory")})
	_, err = load(map[string]string{"BRIDGE_CONFIG": t.TempDir()})
	checkProblems(t, err, []want{p("BRIDGE_CONFIG", "cannot read the file: ")})
}

// The file's problems come with the environment's, every one on its line.
func TestConfigFileProblemsWithTheEnvironments(t *testing.T) {
	content := "apiVersion: kubebridge.io/v1alpha1\nkind: BridgeConfiguration\nresources:\n" +
		"- resource: pods\n  match: object.x ==\n  colour: red\n" +
		"- resource: configmaps\n  when: oldObject\n  ignoreFields: [[]]\n"
	_, err := load(fileEnv(t, content, "BRIDGE_CLUSTER_NAME", "Not A Label", "BRIDGE_RESYNC_PERIOD", "soon"))
	checkProblems(t, err, []want{
		p("BRIDGE_CLUSTER_NAME", "DNS label"),
		p("BRIDGE_RESYNC_PERIOD"),
		p("BRIDGE_CONFIG", ":5: resources[0] (pods): match: 1:12: Syntax error"),
		p("BRIDGE_CONFIG", ":6: resources[0] (pods): colour: unknown field"),
		p("BRIDGE_CONFIG", ":8: resources[1] (configmaps): when: 1:1: the result is dyn"),
		p("BRIDGE_CONFIG", ":9: resources[1] (configmaps): ignoreFields[0]: empty path"),
	})
}

func TestWithReadFile(t *testing.T) {
	var asked string
	read := func(path string) ([]byte, error) {
		asked = path
		if path != "/etc/kubebridge/config/config.yaml" {
			return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
		}
		return []byte(issueExample), nil
	}
	c, err := config.Load(t.Context(), mapLookup(map[string]string{"BRIDGE_CONFIG": "/etc/kubebridge/config/config.yaml"}), config.WithReadFile(read))
	if err != nil {
		t.Fatal(err)
	}
	if asked != "/etc/kubebridge/config/config.yaml" || len(c.Resources) != 2 {
		t.Errorf("read %q, Resources %+v", asked, c.Resources)
	}
	if _, err := config.Load(t.Context(), mapLookup(env()), config.WithReadFile(nil)); err == nil || errors.Is(err, config.ErrInvalid) {
		t.Errorf("WithReadFile(nil): %v, want an error that is not about the configuration", err)
	}
}
