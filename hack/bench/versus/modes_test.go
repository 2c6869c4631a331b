package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// versusBinary is a file for +exe= to name: the suffix only checks that
// it exists.
func versusBinary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "versus-old")
	if err := os.WriteFile(path, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

const knownSuffixList = "(known: +nogzip, +gzip, +gogc=N, +procs=N, +linger=D, +config=PATH, +cbor, +exe=PATH)"

// The -modes strings of earlier runs keep their ids (which name streams
// and profiles) and labels (which name the report's rows), and what was
// refused is refused with the same words.
func TestSelectModes(t *testing.T) {
	exe := versusBinary(t)
	for _, tc := range []struct {
		modes  string
		id     string
		label  string
		errMsg string
	}{
		{modes: "typed", id: "typed", label: "typed informer (protobuf)"},
		{modes: " typed ", id: "typed", label: "typed informer (protobuf)"},
		{modes: "baseline", id: "baseline", label: "baseline: clients only, no informer"},
		{modes: "publish-raw-items", id: "publish-raw-items", label: "informer, then the bridge's snapshot items for its objects published raw"},
		{modes: "bridge-typed", id: "bridge-typed", label: "bridge, typed path, no gzip (its default)"},
		{modes: "bridge-typed@8Mi", id: "bridge-typed@8Mi", label: "bridge, typed path, publish buffer 8Mi, no gzip (its default)"},
		{modes: "bridge-dynamic+gzip", id: "bridge-dynamic+gzip", label: "bridge, dynamic path, gzip"},
		{modes: "bridge-typed+nogzip", id: "bridge-typed+nogzip", label: "bridge, typed path, no gzip"},
		{modes: "typed-shard@1/3", id: "typed-shard@1/3", label: "typed informer, one shard 1/3"},
		{modes: "typed-shard@0/1", id: "typed-shard@0/1", label: "typed informer, one shard 0/1"},
		{modes: "bridge-shard@0/2+gzip", id: "bridge-shard@0/2+gzip", label: "bridge, typed path, one shard 0/2, gzip"},
		{modes: "typed+nogzip", id: "typed+nogzip", label: "typed informer (protobuf), no gzip"},
		{modes: "typed+gogc=50+procs=1", id: "typed+gogc=50+procs=1", label: "typed informer (protobuf), GOGC=50, GOMAXPROCS=1"},
		// Suffixes in any order; the id and the label keep theirs.
		{modes: "typed+procs=1+gogc=50", id: "typed+gogc=50+procs=1", label: "typed informer (protobuf), GOGC=50, GOMAXPROCS=1"},
		// The last of a suffix given twice wins.
		{modes: "typed+gogc=1+gogc=2", id: "typed+gogc=2", label: "typed informer (protobuf), GOGC=2"},
		{modes: "bridge-typed+linger=5ms", id: "bridge-typed+linger=5ms", label: "bridge, typed path, no gzip (its default), linger 5ms"},
		{modes: "typed+exe=" + exe, id: "typed+exe=versus-old", label: "typed informer (protobuf), built as " + exe},
		{modes: "bridge-typed+config=rules.yaml+exe=" + exe, id: "bridge-typed+config=rules.yaml+exe=versus-old", label: "bridge, typed path, no gzip (its default), rules rules.yaml, built as " + exe},
		{modes: "bridge-typed+config=nosuch.yaml", errMsg: `mode "bridge-typed": +config= wants a configuration file: stat nosuch.yaml: no such file or directory`},
		{
			modes: "bridge-typed@8Mi+exe=" + exe + "+linger=1ms+procs=2+gogc=200+nogzip",
			id:    "bridge-typed@8Mi+nogzip+gogc=200+procs=2+linger=1ms+exe=versus-old",
			label: "bridge, typed path, publish buffer 8Mi, no gzip, GOGC=200, GOMAXPROCS=2, linger 1ms, built as " + exe,
		},

		{modes: "nosuch", errMsg: `unknown mode "nosuch" (known: ` + modeNames() + ")"},
		{modes: "typed,nosuch", errMsg: `unknown mode "nosuch" (known: ` + modeNames() + ")"},
		{modes: "typed@8Mi", errMsg: `mode "typed": only bridge modes take a @budget`},
		{modes: "typed-shard", errMsg: `mode "typed-shard": want typed-shard@i/N: contract: shard is not i/N with 0 <= i < N: ""`},
		{modes: "bridge-shard@8Mi", errMsg: `mode "bridge-shard": want bridge-shard@i/N: contract: shard is not i/N with 0 <= i < N: "8Mi"`},
		{modes: "typed-shard@3/3", errMsg: `mode "typed-shard": want typed-shard@i/N: contract: shard is not i/N with 0 <= i < N: "3/3"`},
		{modes: "typed+gzip", errMsg: `mode "typed": only bridge modes take +gzip (an informer asks for gzip unless +nogzip)`},
		{modes: "bridge-typed+gzip+nogzip", errMsg: `mode "bridge-typed": +gzip or +nogzip, not both`},
		{modes: "typed+gzip+nogzip", errMsg: `mode "typed": +gzip or +nogzip, not both`},
		{modes: "typed+linger=1s", errMsg: `mode "typed": only bridge modes take +linger`},
		{modes: "bridge-typed+linger=soon", errMsg: `mode "bridge-typed": +linger= wants a duration: time: invalid duration "soon"`},
		{modes: "bridge-typed+linger", errMsg: `mode "bridge-typed": +linger= wants a duration: time: invalid duration ""`},
		{modes: "typed+gogc=x", errMsg: `mode "typed": +gogc= wants a number`},
		{modes: "typed+gogc", errMsg: `mode "typed": +gogc= wants a number`},
		{modes: "typed+procs=", errMsg: `mode "typed": +procs= wants a number`},
		{modes: "typed+exe=/nonexistent/versus", errMsg: `mode "typed": +exe= wants a versus binary: stat /nonexistent/versus: no such file or directory`},
		{modes: "typed+foo=1", errMsg: `mode "typed": unknown suffix +foo ` + knownSuffixList},
		// Unknown, whether or not it has a value.
		{modes: "typed+foo", errMsg: `mode "typed": unknown suffix +foo ` + knownSuffixList},
		{modes: "typed+", errMsg: `mode "typed": unknown suffix + ` + knownSuffixList},
		{modes: "typed+nogzip=1", errMsg: `mode "typed": +nogzip= takes no value`},
		{modes: "bridge-typed+gzip=", errMsg: `mode "bridge-typed": +gzip= takes no value`},
		// A value's error names the mode as written, before its "@".
		{modes: "typed-shard@0/3+gogc=x", errMsg: `mode "typed-shard@0/3": +gogc= wants a number`},
		// The suffixes' values are checked before the mode's name.
		{modes: "nosuch+gogc=x", errMsg: `mode "nosuch": +gogc= wants a number`},
	} {
		t.Run(tc.modes, func(t *testing.T) {
			got, err := selectModes(tc.modes)
			if tc.errMsg != "" {
				if err == nil || err.Error() != tc.errMsg {
					t.Fatalf("error %v, want %s", err, tc.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d modes", len(got))
			}
			if got[0].id() != tc.id || got[0].label != tc.label {
				t.Errorf("id %q label %q, want %q, %q", got[0].id(), got[0].label, tc.id, tc.label)
			}
		})
	}
}

// Every suffix on every mode: taken where the mode takes it, refused with
// the mode's name where it does not.
func TestEverySuffixOnEveryMode(t *testing.T) {
	exe := versusBinary(t)
	bridges := []string{"bridge-typed", "bridge-dynamic", "bridge-shard", "bridge-crd"}
	shards := []string{"typed-shard", "bridge-shard"}
	all := strings.Split(modeNames(), ",")
	if len(all) != 14 {
		t.Fatalf("modes %v: this test knows 14", all)
	}
	for _, name := range all {
		bridge, sharded := slices.Contains(bridges, name), slices.Contains(shards, name)
		head := name
		if sharded {
			head += "@1/2"
		}
		refused := func(suffix string) string { return "mode " + `"` + name + `"` + ": only bridge modes take " + suffix }
		for _, tc := range []struct {
			modes, id, errMsg string
		}{
			{modes: head + "+nogzip", id: head + "+nogzip"},
			{modes: head + "+gogc=50", id: head + "+gogc=50"},
			{modes: head + "+procs=2", id: head + "+procs=2"},
			{modes: head + "+cbor", id: head + "+cbor"},
			{modes: head + "+exe=" + exe, id: head + "+exe=versus-old"},
			{modes: head + "+gzip", id: head + "+gzip", errMsg: map[bool]string{false: refused("+gzip (an informer asks for gzip unless +nogzip)")}[bridge]},
			{modes: head + "+linger=5ms", id: head + "+linger=5ms", errMsg: map[bool]string{false: refused("+linger")}[bridge]},
			{modes: head + "+config=patch.yaml", id: head + "+config=patch.yaml", errMsg: map[bool]string{false: refused("+config")}[bridge]},
			{modes: name + "@8Mi", id: name + "@8Mi", errMsg: budgetRefusal(name, bridge, sharded)},
		} {
			got, err := selectModes(tc.modes)
			switch {
			case tc.errMsg != "":
				if err == nil || err.Error() != tc.errMsg {
					t.Errorf("%s: error %v, want %s", tc.modes, err, tc.errMsg)
				}
			case err != nil:
				t.Errorf("%s: %v", tc.modes, err)
			case got[0].id() != tc.id:
				t.Errorf("%s: id %q, want %q", tc.modes, got[0].id(), tc.id)
			}
		}
	}
}

// budgetRefusal is the error for a publish buffer after mode name: a
// shard mode wants its shard there, and other modes than the bridge's
// have no publish buffer.
func budgetRefusal(name string, bridge, sharded bool) string {
	switch {
	case sharded:
		return `mode "` + name + `": want ` + name + `@i/N: contract: shard is not i/N with 0 <= i < N: "8Mi"`
	case !bridge:
		return `mode "` + name + `": only bridge modes take a @budget`
	}
	return ""
}

// Without -modes every mode runs once, under its plain label.
func TestSelectModesDefaultsToEveryMode(t *testing.T) {
	got, err := selectModes("")
	if err != nil {
		t.Fatal(err)
	}
	var ids, labels []string
	for _, m := range got {
		ids, labels = append(ids, m.id()), append(labels, m.label)
	}
	want := "baseline,typed,typed-transform,dynamic,dynamic-transform,typed-shard@0/1,publish-raw,publish-raw-items,typed-publish,bridge-typed,bridge-dynamic,bridge-shard@0/1,dynamic-crd,bridge-crd"
	if strings.Join(ids, ",") != want {
		t.Errorf("ids %s, want %s", strings.Join(ids, ","), want)
	}
	if labels[9] != "bridge, typed path" || labels[5] != "typed informer, one shard" {
		t.Errorf("labels %q", labels)
	}
}
