package image

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestDockerfileDeclaresTheSpec compares the Dockerfile's final stage, the
// alternative for people with a Docker engine, with what make image
// builds: from scratch, the same files at the same paths, user,
// entrypoint, port and working directory, and the same annotation keys as
// labels (with the same source).
func TestDockerfileDeclaresTheSpec(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	final := finalStage(t, string(data))
	spec := Kubebridge()

	if final.from != "scratch" {
		t.Errorf("the final stage is FROM %q, want scratch", final.from)
	}
	var want []string
	for _, f := range spec.Files {
		want = append(want, f.Path)
	}
	sort.Strings(want)
	got := slices.Sorted(maps.Keys(final.copies))
	if !slices.Equal(got, want) {
		t.Errorf("the Dockerfile copies to %q, the image holds %q", got, want)
	}
	for dst, src := range final.copies {
		if filepath.Base(src) != filepath.Base(dst) || !strings.HasPrefix(src, "/src/bin/") {
			t.Errorf("COPY %s %s: want the binary make build leaves in bin/ under the same name", src, dst)
		}
	}
	if final.user != spec.User {
		t.Errorf("USER %q, the image runs as %q", final.user, spec.User)
	}
	if !slices.Equal(final.entrypoint, spec.Entrypoint) {
		t.Errorf("ENTRYPOINT %q, the image's is %q", final.entrypoint, spec.Entrypoint)
	}
	if !slices.Equal(final.expose, spec.ExposedPorts) {
		t.Errorf("EXPOSE %q, the image exposes %q", final.expose, spec.ExposedPorts)
	}
	if final.workdir != "/" {
		t.Errorf("WORKDIR %q, the image's is /", final.workdir)
	}
	wantLabels := slices.Sorted(maps.Keys(testMeta().Annotations()))
	if got := slices.Sorted(maps.Keys(final.labels)); !slices.Equal(got, wantLabels) {
		t.Errorf("LABEL keys %q, the image's annotations %q", got, wantLabels)
	}
	if final.labels[AnnotationSource] != SourceURL {
		t.Errorf("LABEL %s=%q, the image's is %q", AnnotationSource, final.labels[AnnotationSource], SourceURL)
	}
}

// stage is what a Dockerfile stage declares, as far as the test needs.
type stage struct {
	from       string
	copies     map[string]string // destination → source
	user       string
	entrypoint []string
	expose     []string
	workdir    string
	labels     map[string]string
}

// finalStage parses the instructions of the Dockerfile's last stage: lines
// joined at a trailing backslash, comments dropped. An instruction there
// that the test does not know fails it, so that what the image declares
// cannot grow in the Dockerfile alone.
func finalStage(t *testing.T, dockerfile string) stage {
	t.Helper()
	var lines []string
	var cur strings.Builder
	for _, l := range strings.Split(dockerfile, "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	last := -1
	for i, l := range lines {
		if instr, _, _ := strings.Cut(l, " "); strings.EqualFold(instr, "FROM") {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("no FROM in the Dockerfile")
	}
	var st stage
	for _, l := range lines[last:] {
		instr, rest, _ := strings.Cut(l, " ")
		args := strings.Fields(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			st = stage{from: args[len(args)-1], copies: map[string]string{}, labels: map[string]string{}}
			if len(args) >= 3 && strings.EqualFold(args[len(args)-2], "AS") {
				st.from = args[len(args)-3]
			}
		case "COPY":
			var paths []string
			for _, a := range args {
				if !strings.HasPrefix(a, "--") {
					paths = append(paths, a)
				}
			}
			if len(paths) != 2 {
				t.Fatalf("COPY with %d paths: %s", len(paths), l)
			}
			st.copies[paths[1]] = paths[0]
		case "USER":
			st.user = rest
		case "EXPOSE":
			for _, p := range args {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				st.expose = append(st.expose, p)
			}
		case "WORKDIR":
			st.workdir = rest
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &st.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s: want the exec (JSON) form, as the image has no shell: %v", rest, err)
			}
		case "LABEL":
			for _, kv := range args {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("LABEL %s: want key=value", kv)
				}
				st.labels[k] = v
			}
		case "ARG":
		default:
			t.Fatalf("%s in the final stage: make image does no such thing (or this test does not know it yet)", l)
		}
	}
	return st
}
