package contract_test

import (
	"errors"
	"testing"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestParseEveryKind: the one parser reads back every kind of subject
// Subjects builds, and nothing else.
func TestParseEveryKind(t *testing.T) {
	s := contract.Subjects{Prefix: "org.kb", Cluster: "eu-1"}
	for subject, want := range map[string]contract.Subject{
		s.Term():                                 {Kind: contract.TermSubject},
		s.SnapshotBegin(widgets):                 {Kind: contract.BeginSubject, Type: widgets},
		s.SnapshotEnd(nodes):                     {Kind: contract.EndSubject, Type: nodes},
		s.Object(configMaps, "web", "a.b"):       {Kind: contract.ObjectSubject, Type: configMaps, Namespace: "web", Name: "a.b"},
		s.Object(nodes, "", "n1"):                {Kind: contract.ObjectSubject, Type: nodes, Name: "n1"},
		s.ObjectOfKey(configMaps, "web/a"):       {Kind: contract.ObjectSubject, Type: configMaps, Namespace: "web", Name: "a"},
		s.ObjectOfKey(nodes, "n2"):               {Kind: contract.ObjectSubject, Type: nodes, Name: "n2"},
		"org.kb.eu-1.%63ore.v1.configmaps.web.a": {Kind: contract.ObjectSubject, Type: contract.Type{Group: "core", Version: "v1", Resource: "configmaps"}, Namespace: "web", Name: "a"},
	} {
		got, err := s.Parse(subject)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v, want %+v", subject, got, err, want)
		}
	}
	for _, subject := range []string{
		"org.kb.eu-2._term",                          // another cluster
		"org.kb.eu-1._term.x",                        // too long for a term, too short for a type
		"org.kb.eu-1.core.v1.configmaps._snapshot.x", // neither begin nor end
		"org.kb.eu-1.core.v1.configmaps.web",         // no name
		"org.kb.eu-1.core.v1.configmaps.web.a.b",     // a dot in a name is escaped
		"org.kb.eu-1.core.v1.configmaps.%.a",         // the empty namespace is _cluster
	} {
		if got, err := s.Parse(subject); !errors.Is(err, contract.ErrBadToken) {
			t.Errorf("Parse(%q) = %+v, %v, want ErrBadToken", subject, got, err)
		}
	}
}

func TestParseObjectSuffix(t *testing.T) {
	s := contract.Subjects{Prefix: "kb", Cluster: "c"}
	keys := []string{"web/a.b", "n1", "kube-system/x y"}
	want := [][2]string{{"web", "a.b"}, {"", "n1"}, {"kube-system", "x y"}}
	suffixes := s.ObjectSuffixes(keys)
	if suffixes != "web.a_b _cluster.n1 kube-system.x%20y" {
		t.Errorf("ObjectSuffixes = %q", suffixes)
	}
	for i, suffix := range []string{"web.a_b", "_cluster.n1", "kube-system.x%20y"} {
		ns, name, err := contract.ParseObjectSuffix(suffix)
		if err != nil || ns != want[i][0] || name != want[i][1] {
			t.Errorf("ParseObjectSuffix(%q) = %q, %q, %v", suffix, ns, name, err)
		}
	}
	for _, bad := range []string{"web", "web.a.b", "%.a", "web.%7A"} {
		if _, _, err := contract.ParseObjectSuffix(bad); !errors.Is(err, contract.ErrBadToken) {
			t.Errorf("ParseObjectSuffix(%q): %v, want ErrBadToken", bad, err)
		}
	}
}

func TestParseTypeName(t *testing.T) {
	for name, want := range map[string]contract.Type{
		"configmaps":                   {Resource: "configmaps"},
		"ConfigMaps.v1":                {Version: "v1", Resource: "configmaps"},
		"deployments.apps":             {Group: "apps", Resource: "deployments"},
		"hpa.v2beta1.autoscaling":      {Group: "autoscaling", Version: "v2beta1", Resource: "hpa"},
		"ingresses.networking.k8s.io":  {Group: "networking.k8s.io", Resource: "ingresses"},
		"widgets.v1alpha3.example.com": {Group: "example.com", Version: "v1alpha3", Resource: "widgets"},
		"things.vendor.example":        {Group: "vendor.example", Resource: "things"},
	} {
		got, err := contract.ParseTypeName(name)
		if err != nil || got != want {
			t.Errorf("ParseTypeName(%q) = %+v, %v, want %+v", name, got, err, want)
		}
		if back, _ := contract.ParseTypeName(got.String()); back != got {
			t.Errorf("ParseTypeName(%q.String() = %q) = %+v", name, got.String(), back)
		}
	}
	for _, bad := range []string{"", " ", "a..b", "a.*", "cm.>"} {
		if got, err := contract.ParseTypeName(bad); !errors.Is(err, contract.ErrBadTypeName) {
			t.Errorf("ParseTypeName(%q) = %+v, %v, want ErrBadTypeName", bad, got, err)
		}
	}
}

func TestIsVersion(t *testing.T) {
	for s, want := range map[string]bool{
		"v1": true, "v2beta1": true, "v1alpha3": true, "v10": true,
		"": false, "v": false, "1": false, "vx": false, "v1beta": false, "v1gamma1": false, "v1beta1x": false, "apps": false, "valpha1": false,
	} {
		if got := contract.IsVersion(s); got != want {
			t.Errorf("IsVersion(%q) = %v, want %v", s, got, want)
		}
	}
}
