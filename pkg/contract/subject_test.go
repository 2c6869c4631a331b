package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

var tokenCases = []struct {
	in, tok string
}{
	{"", "%"},
	{"default", "default"},
	{"kube-system", "kube-system"},
	{"ABCxyz019-", "ABCxyz019-"},
	{".", "_"},
	{"..", "__"},
	{"a.b", "a_b"},
	{"networking.k8s.io", "networking_k8s_io"},
	{"rbac.authorization.k8s.io", "rbac_authorization_k8s_io"},
	{"system:controller:foo", "system%3Acontroller%3Afoo"},
	{"*", "%2A"},
	{">", "%3E"},
	{"a b", "a%20b"},
	{"%", "%25"},
	{"_", "%5F"},
	{"a_b.c", "a%5Fb_c"},
	{"%2E", "%252E"},
	{"100%", "100%25"},
	{"日本", "%E6%97%A5%E6%9C%AC"},
	{"\x00", "%00"},
	{"\xff", "%FF"},
	{"a\tb", "a%09b"},
	{"a/b", "a%2Fb"},
	{"_cluster", "%5Fcluster"},
	{".cluster", "_cluster"},
}

func TestEscapeToken(t *testing.T) {
	for _, tc := range tokenCases {
		if got := contract.EscapeToken(tc.in); got != tc.tok {
			t.Errorf("EscapeToken(%q) = %q, want %q", tc.in, got, tc.tok)
		}
		got, err := contract.UnescapeToken(tc.tok)
		if err != nil || got != tc.in {
			t.Errorf("UnescapeToken(%q) = %q, %v, want %q", tc.tok, got, err, tc.in)
		}
	}
}

func TestUnescapeTokenErrors(t *testing.T) {
	for _, tok := range []string{
		"", "a.b", "a*b", ">", "a b", "%4", "a%", "%%", "%zz", "%G0", "%2e", "%e6", "a%2", "%%41", "é",
	} {
		if got, err := contract.UnescapeToken(tok); !errors.Is(err, contract.ErrBadToken) {
			t.Errorf("UnescapeToken(%q) = %q, %v, want ErrBadToken", tok, got, err)
		}
	}
}

// nonCanonicalTokens decode, but EscapeToken never makes them: the escaped
// byte is one EscapeToken writes as itself ('A', '-') or as '_' ('.').
var nonCanonicalTokens = []string{"%41", "%61bc", "%2D", "%2E", "a%2Eb", "%30"}

// TestUnescapeTokenRejectsNonCanonical: a token EscapeToken cannot produce
// must not decode, or two subjects would name the same object.
func TestUnescapeTokenRejectsNonCanonical(t *testing.T) {
	var accepted []string
	for _, tok := range nonCanonicalTokens {
		s, err := contract.UnescapeToken(tok)
		if err == nil {
			accepted = append(accepted, tok+" -> "+s+" (canonical "+contract.EscapeToken(s)+")")
		}
	}
	if len(accepted) == 0 {
		return
	}
	t.Errorf("UnescapeToken accepts non-canonical tokens: %s", strings.Join(accepted, ", "))
}

func FuzzEscapeToken(f *testing.F) {
	for _, s := range []string{
		"", ".", "..", "a.b", "system:controller:x", "*", ">", "a b", "%", "_", "%2E", "日本", "\x00", "a\tb",
		"%41", "%2e", "%", "%%", "_cluster", "a%", "%4", "\xff\xfe", "networking.k8s.io",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := contract.EscapeToken(s)
		if tok == "" {
			t.Fatalf("EscapeToken(%q) is empty", s)
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if c < 0x21 || c > 0x7e || c == '.' || c == '*' || c == '>' {
				t.Fatalf("EscapeToken(%q) = %q has byte %q, not allowed in a NATS subject token", s, tok, c)
			}
		}
		if !server.IsValidLiteralSubject("p." + tok + ".q") {
			t.Fatalf("EscapeToken(%q) = %q does not make a valid literal subject", s, tok)
		}
		back, err := contract.UnescapeToken(tok)
		if err != nil || back != s {
			t.Fatalf("UnescapeToken(EscapeToken(%q)) = %q, %v", s, back, err)
		}

		// s as a token someone else made: never a panic, and what decodes
		// must be in canonical form.
		dec, err := contract.UnescapeToken(s)
		if err != nil {
			if !errors.Is(err, contract.ErrBadToken) {
				t.Fatalf("UnescapeToken(%q): error %v does not wrap ErrBadToken", s, err)
			}
			return
		}
		if again := contract.EscapeToken(dec); again != s {
			t.Fatalf("UnescapeToken(%q) = %q, which EscapeToken writes as %q: token is not canonical", s, dec, again)
		}
	})
}

var (
	configMaps   = contract.Type{Version: "v1", Resource: "configmaps"}
	ingresses    = contract.Type{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	nodes        = contract.Type{Version: "v1", Resource: "nodes"}
	clusterRoles = contract.Type{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	widgets      = contract.Type{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func TestSubjects(t *testing.T) {
	s := contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}
	if got, want := s.Stream(), "kubebridge.>"; got != want {
		t.Errorf("Stream() = %q, want %q", got, want)
	}
	if got, want := s.ClusterWildcard(), "kubebridge.prod.>"; got != want {
		t.Errorf("ClusterWildcard() = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		r    contract.Type
		want string
	}{
		{configMaps, "kubebridge.prod.core.v1.configmaps"},
		{ingresses, "kubebridge.prod.networking_k8s_io.v1.ingresses"},
		{clusterRoles, "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles"},
		{widgets, "kubebridge.prod.example_com.v1.widgets"},
		{contract.Type{Group: "apps", Version: "v1beta2", Resource: "deployments"},
			"kubebridge.prod.apps.v1beta2.deployments"},
	} {
		if got := s.Type(tc.r); got != tc.want {
			t.Errorf("Type(%s) = %q, want %q", tc.r, got, tc.want)
		}
		if got := s.TypeWildcard(tc.r); got != tc.want+".>" {
			t.Errorf("TypeWildcard(%s) = %q, want %q", tc.r, got, tc.want+".>")
		}
	}

	for _, tc := range []struct {
		r         contract.Type
		ns, name  string
		want      string
		wantGroup string
	}{
		{configMaps, "default", "app-config", "kubebridge.prod.core.v1.configmaps.default.app-config", ""},
		{configMaps, "kube-system", "kube-root-ca.crt", "kubebridge.prod.core.v1.configmaps.kube-system.kube-root-ca_crt", ""},
		{ingresses, "web", "shop.example.com", "kubebridge.prod.networking_k8s_io.v1.ingresses.web.shop_example_com", "networking.k8s.io"},
		{nodes, "", "ip-10-0-0-1.ec2.internal", "kubebridge.prod.core.v1.nodes._cluster.ip-10-0-0-1_ec2_internal", ""},
		{clusterRoles, "", "system:controller:foo*>", "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles._cluster.system%3Acontroller%3Afoo%2A%3E", "rbac.authorization.k8s.io"},
		{clusterRoles, "", "has space", "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles._cluster.has%20space", "rbac.authorization.k8s.io"},
		{clusterRoles, "", "50%_off", "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles._cluster.50%25%5Foff", "rbac.authorization.k8s.io"},
		{clusterRoles, "", "rôle-日本", "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles._cluster.r%C3%B4le-%E6%97%A5%E6%9C%AC", "rbac.authorization.k8s.io"},
		{clusterRoles, "", "_cluster", "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles._cluster.%5Fcluster", "rbac.authorization.k8s.io"},
		{clusterRoles, "", ".cluster", "kubebridge.prod.rbac_authorization_k8s_io.v1.clusterroles._cluster._cluster", "rbac.authorization.k8s.io"},
		{widgets, "team-a", "gizmo", "kubebridge.prod.example_com.v1.widgets.team-a.gizmo", "example.com"},
	} {
		got := s.Object(tc.r, tc.ns, tc.name)
		if got != tc.want {
			t.Errorf("Object(%s, %q, %q) = %q, want %q", tc.r, tc.ns, tc.name, got, tc.want)
		}
		if !server.IsValidLiteralSubject(got) {
			t.Errorf("Object(%s, %q, %q) = %q is not a valid literal subject", tc.r, tc.ns, tc.name, got)
		}
		ref, err := s.ParseObject(got)
		want := contract.Subject{Kind: contract.ObjectSubject, Type: contract.Type{Group: tc.wantGroup, Version: tc.r.Version, Resource: tc.r.Resource}, Namespace: tc.ns, Name: tc.name}
		if err != nil || ref != want {
			t.Errorf("ParseObject(%q) = %+v, %v, want %+v", got, ref, err, want)
		}
		for _, w := range []string{s.TypeWildcard(tc.r), s.ClusterWildcard(), s.Stream()} {
			if !subjectMatches(w, got) {
				t.Errorf("%q does not match %q", w, got)
			}
		}
	}

	for _, tc := range []struct {
		r    contract.Type
		kind contract.Kind
		want string
	}{
		{configMaps, contract.BeginSubject, "kubebridge.prod.core.v1.configmaps._snapshot.begin"},
		{configMaps, contract.EndSubject, "kubebridge.prod.core.v1.configmaps._snapshot.end"},
		{ingresses, contract.BeginSubject, "kubebridge.prod.networking_k8s_io.v1.ingresses._snapshot.begin"},
		{nodes, contract.EndSubject, "kubebridge.prod.core.v1.nodes._snapshot.end"},
	} {
		got := s.SnapshotBegin(tc.r)
		if tc.kind == contract.EndSubject {
			got = s.SnapshotEnd(tc.r)
		}
		if got != tc.want {
			t.Errorf("%s of %s = %q, want %q", tc.kind, tc.r, got, tc.want)
		}
		if sub, err := s.Parse(got); err != nil || sub != (contract.Subject{Kind: tc.kind, Type: tc.r}) {
			t.Errorf("Parse(%q) = %+v, %v", got, sub, err)
		}
		if !subjectMatches(s.TypeWildcard(tc.r), got) {
			t.Errorf("TypeWildcard(%s) does not match marker %q", tc.r, got)
		}
		if _, err := s.ParseObject(got); !errors.Is(err, contract.ErrBadToken) {
			t.Errorf("ParseObject(marker %q): %v, want ErrBadToken", got, err)
		}
	}
}

// TestTypeWildcardIsolation: one type's wildcard matches none of another
// type's subjects, even for lookalike names.
func TestTypeWildcardIsolation(t *testing.T) {
	s := contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}
	other := contract.Subjects{Prefix: "kubebridge", Cluster: "staging"}
	lookalike := contract.Type{Version: "v1", Resource: "configmaps.default"}
	coreV2 := contract.Type{Version: "v2", Resource: "configmaps"}
	subjects := map[contract.Type][]string{}
	for _, r := range []contract.Type{configMaps, ingresses, nodes, clusterRoles, widgets, lookalike, coreV2} {
		subjects[r] = []string{
			s.Object(r, "default", "x"), s.Object(r, "", "y.z"), s.Object(r, "a.b", "*"),
			s.SnapshotBegin(r), s.SnapshotEnd(r),
		}
	}
	for r, subs := range subjects {
		for r2, subs2 := range subjects {
			w := s.TypeWildcard(r)
			for _, sub := range subs2 {
				if got := subjectMatches(w, sub); got != (r == r2) {
					t.Errorf("%q matches %q: %v, want %v", w, sub, got, r == r2)
				}
			}
		}
		for _, sub := range subs {
			if subjectMatches(other.ClusterWildcard(), sub) {
				t.Errorf("cluster staging's wildcard matches prod subject %q", sub)
			}
		}
	}
}

func TestParseObjectErrors(t *testing.T) {
	s := contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}
	for _, subj := range []string{
		"kubebridge.staging.core.v1.configmaps.default.x",
		"other.prod.core.v1.configmaps.default.x",
		"kubebridge.prod.core.v1.configmaps.default",
		"kubebridge.prod.core.v1.configmaps.default.x.y",
		"kubebridge.prod.core.v1.configmaps._snapshot.begin",
		"kubebridge.prod.core.v1.configmaps.default.%zz",
		"kubebridge.prod.core.v1.configmaps.%4.x",
		"kubebridge.prod.%.v1.configmaps.default.x%",
		"kubebridge.prod",
		"kubebridge.prodx.core.v1.configmaps.default.x",
	} {
		if ref, err := s.ParseObject(subj); !errors.Is(err, contract.ErrBadToken) {
			t.Errorf("ParseObject(%q) = %+v, %v, want ErrBadToken", subj, ref, err)
		}
	}
}

// TestParseObjectMultiTokenPrefix: a prefix of several tokens works both ways.
func TestParseObjectMultiTokenPrefix(t *testing.T) {
	s := contract.Subjects{Prefix: "org.k8s.events", Cluster: "eu-1"}
	subj := s.Object(ingresses, "web", "shop")
	if subj != "org.k8s.events.eu-1.networking_k8s_io.v1.ingresses.web.shop" {
		t.Fatalf("Object = %q", subj)
	}
	ref, err := s.ParseObject(subj)
	want := contract.Subject{Kind: contract.ObjectSubject, Type: ingresses, Namespace: "web", Name: "shop"}
	if err != nil || ref != want {
		t.Errorf("ParseObject = %+v, %v, want %+v", ref, err, want)
	}
}

// subjectMatches is NATS subject matching: '*' matches one token, a final
// '>' one or more. It is checked against the server's own implementation.
func subjectMatches(filter, subject string) bool {
	ft, st := strings.Split(filter, "."), strings.Split(subject, ".")
	mine := func() bool {
		for i, f := range ft {
			if f == ">" {
				return i == len(ft)-1 && len(st) > i
			}
			if i >= len(st) || f != "*" && f != st[i] {
				return false
			}
		}
		return len(ft) == len(st)
	}()
	if srv := server.SubjectMatchesFilter(subject, filter); srv != mine {
		panic("subjectMatches(" + filter + ", " + subject + ") disagrees with the NATS server")
	}
	return mine
}

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		filter, subject string
		want            bool
	}{
		{"a.>", "a.b", true},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.*.c", "a.b.c", true},
		{"a.b", "a.b", true},
		{"a.b", "a.bc", false},
		{"a.b.>", "a.bc.d", false},
	} {
		if got := subjectMatches(tc.filter, tc.subject); got != tc.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", tc.filter, tc.subject, got, tc.want)
		}
	}
}

// FuzzObjectSubject: any namespace and name make one valid literal subject
// under the type's wildcard that parses back to them.
func FuzzObjectSubject(f *testing.F) {
	f.Add("default", "app-config")
	f.Add("", "system:controller:foo*>")
	f.Add("a.b", "_cluster")
	f.Add("_snapshot", "begin")
	f.Add("%", "")
	f.Fuzz(func(t *testing.T, ns, name string) {
		s := contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}
		for _, r := range []contract.Type{configMaps, ingresses} {
			subj := s.Object(r, ns, name)
			if !server.IsValidLiteralSubject(subj) {
				t.Fatalf("Object(%q, %q) = %q is not a valid literal subject", ns, name, subj)
			}
			if !subjectMatches(s.TypeWildcard(r), subj) {
				t.Fatalf("TypeWildcard does not match %q", subj)
			}
			ref, err := s.ParseObject(subj)
			want := contract.Subject{Kind: contract.ObjectSubject, Type: r, Namespace: ns, Name: name}
			if err != nil || ref != want {
				t.Fatalf("ParseObject(%q) = %+v, %v, want %+v", subj, ref, err, want)
			}
			if s.SnapshotBegin(r) == subj || s.SnapshotEnd(r) == subj || s.Term() == subj {
				t.Fatalf("object subject %q collides with a marker", subj)
			}
		}
	})
}

// TestParseObjectRejectsNonCanonical: ParseObject should accept only what
// Object makes, or several subjects name one object (and a consumer keying
// on ParseObject's result sees two histories). Known bug.
func TestParseObjectRejectsNonCanonical(t *testing.T) {
	s := contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}
	var accepted []string
	for _, subj := range []string{
		"kubebridge.prod.core.v1.configmaps.%.x",         // "%" (empty) instead of _cluster
		"kubebridge.prod.%.v1.configmaps.default.x",      // "%" (empty) instead of core
		"kubebridge.prod.core.v1.configmaps.default.%78", // escaped plain byte
		"kubebridge.prod.core.v1.configmaps.default.a%2Eb",
	} {
		if ref, err := s.ParseObject(subj); err == nil {
			accepted = append(accepted, subj+" -> "+ref.Namespace+"/"+ref.Name)
		}
	}
	if len(accepted) > 0 {
		t.Errorf("ParseObject accepts subjects Object never makes: %s", strings.Join(accepted, "; "))
	}
}

// TestObjectCoreGroupCollision: an API group literally named "core" (only
// an aggregated API could serve one: Kubernetes requires a dot in CRD
// groups) must not get the subjects of the legacy core group, and its
// subjects parse back to it.
func TestObjectCoreGroupCollision(t *testing.T) {
	s := contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}
	named := contract.Type{Group: "core", Version: "v1", Resource: "configmaps"}
	a, b := s.Object(named, "default", "x"), s.Object(configMaps, "default", "x")
	if a == b {
		t.Fatalf("group %q and the core group share subject %q", "core", a)
	}
	for subject, group := range map[string]string{a: "core", b: ""} {
		ref, err := s.ParseObject(subject)
		if err != nil {
			t.Fatalf("ParseObject(%q): %v", subject, err)
		}
		if ref.Group != group {
			t.Errorf("ParseObject(%q): group %q, want %q", subject, ref.Group, group)
		}
	}
}
