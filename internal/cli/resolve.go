package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ErrAmbiguous is returned for a resource name that several types of the
// stream answer to.
var ErrAmbiguous = errors.New("ambiguous resource name")

// streamType is one type the stream holds, as its subjects name it.
type streamType struct {
	Group, Version, Resource string
}

// filter is the type as a consume.Filter names it: resource.version.group
// when the version is pinned, else resource.group.
func (t streamType) filter() string { return contract.Type(t).String() }

// String is the type as kubectl names it: resource.group.
func (t streamType) String() string {
	if t.Group == "" {
		return t.Resource
	}
	return t.Resource + "." + t.Group
}

// subject is the type's subject prefix (* for an unpinned version).
func (t streamType) subject(s contract.Subjects) string {
	return s.Type(contract.Type(t))
}

// streamTypes lists the types of the cluster the stream holds, from their
// snapshot marker subjects: every type the bridge publishes has them,
// however many objects it has.
func streamTypes(ctx context.Context, js jetstream.JetStream, stream string, s contract.Subjects) ([]streamType, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(s.AllMarkers()))
	if err != nil {
		return nil, fmt.Errorf("list the types of stream %s: %w", stream, err)
	}
	var out []streamType
	for subj := range info.State.Subjects {
		sub, err := s.Parse(subj)
		if err != nil || slices.Contains(out, streamType(sub.Type)) {
			continue
		}
		out = append(out, streamType(sub.Type))
	}
	slices.SortFunc(out, func(a, b streamType) int { return strings.Compare(a.filter(), b.filter()) })
	return out, nil
}

// resolved is a resource name resolved against the stream.
type resolved struct {
	streamType
	// inStream is set when the stream holds the type.
	inStream bool
	// clusterScoped is set when the stream holds cluster-scoped objects
	// of the type.
	clusterScoped bool
	// chosen is set when resolve pinned the version itself, among
	// several in the stream.
	chosen bool
}

// resolve turns what a person typed (configmaps, cm, configmap, ConfigMap,
// deploy, deployments.apps, hpa.v2.autoscaling, widgets) into a type of
// the stream. Without a group, the stream's types decide (a custom
// resource is found by its plural or singular name), then the built-in
// types. A type served at several versions gets the newest one pinned;
// name the version to choose another.
func resolve(ctx context.Context, c *conn, word string) (resolved, error) {
	types, err := streamTypes(ctx, c.js, c.stream, c.subjects)
	if err != nil {
		return resolved{}, err
	}
	r, err := resolveIn(types, word)
	if err != nil || !r.inStream {
		return r, err
	}
	st, err := c.js.Stream(ctx, c.stream)
	if err != nil {
		return r, err
	}
	_, err = st.GetLastMsgForSubject(ctx, c.subjects.Namespace(contract.Type(r.streamType), ""))
	switch {
	case err == nil:
		r.clusterScoped = true
	case !errors.Is(err, jetstream.ErrMsgNotFound):
		return r, fmt.Errorf("scope of %s: %w", r, err)
	}
	return r, nil
}

// resolveIn resolves word against the types of a stream.
func resolveIn(types []streamType, word string) (resolved, error) {
	n, err := parseResourceArg(word)
	if err != nil {
		return resolved{}, err
	}
	builtin := builtinNames()
	cands := n.candidates(types, builtin)
	if len(cands) == 0 {
		return resolved{streamType: notInStream(builtin, n.name, n.group, n.pinned, n.dotted)}, nil
	}
	var grs []schema.GroupResource
	for _, t := range cands {
		if gr := t.groupResource(); !slices.Contains(grs, gr) {
			grs = append(grs, gr)
		}
	}
	gr, ok := preferGroup(grs)
	if !ok {
		var names []string
		for _, g := range grs {
			names = append(names, g.String())
		}
		return resolved{}, fmt.Errorf("%w: %q is %s; name the group", ErrAmbiguous, n.word, strings.Join(names, " and "))
	}
	return pickVersion(cands, gr, n.pinned), nil
}

func (t streamType) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: t.Group, Resource: t.Resource}
}

// resourceArg is a resource name as a person typed it, split as kubectl
// splits it: name[.version][.group].
type resourceArg struct {
	word, name, pinned, group string
	// dotted is set when the word names a group ("" for the core one).
	dotted bool
}

func parseResourceArg(word string) (resourceArg, error) {
	word = strings.ToLower(strings.TrimSpace(word))
	if word == "" || strings.ContainsAny(word, "*> \t/") {
		return resourceArg{}, fmt.Errorf("%q is not a resource name", word)
	}
	n := resourceArg{word: word}
	var rest string
	n.name, rest, n.dotted = strings.Cut(word, ".")
	if n.dotted {
		toks := strings.Split(rest, ".")
		if contract.IsVersion(toks[0]) {
			n.pinned, toks = toks[0], toks[1:]
		}
		n.group = strings.Join(toks, ".")
	}
	return n, nil
}

// candidates are the types of the stream the name can stand for.
func (n resourceArg) candidates(types []streamType, builtin map[string][]schema.GroupResource) []streamType {
	// The plurals the name can stand for, per group ("" any group).
	plurals := map[string]bool{n.name: true}
	for _, gr := range builtin[n.name] {
		plurals[gr.Resource] = true
	}
	guess, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: n.name})
	plurals[guess.Resource] = true

	var cands []streamType
	for _, t := range types {
		if !plurals[t.Resource] || n.dotted && t.Group != n.group || n.pinned != "" && t.Version != n.pinned {
			continue
		}
		// A built-in's short or singular name names its own group only.
		if t.Resource != n.name && t.Resource != guess.Resource && !slices.Contains(builtin[n.name], t.groupResource()) {
			continue
		}
		cands = append(cands, t)
	}
	return cands
}

// pickVersion is gr among the candidates, at version pinned; when it is
// not pinned and the stream holds several, the newest, as kubectl takes
// the preferred one: one indexer holds one version.
func pickVersion(cands []streamType, gr schema.GroupResource, pinned string) resolved {
	var versions []string
	for _, t := range cands {
		if t.groupResource() == gr {
			versions = append(versions, t.Version)
		}
	}
	r := resolved{streamType: streamType{Group: gr.Group, Resource: gr.Resource, Version: pinned}, inStream: true}
	if len(versions) > 1 {
		slices.SortFunc(versions, func(a, b string) int { return -version.CompareKubeAwareVersionStrings(a, b) })
		r.Version, r.chosen = versions[0], true
	}
	return r
}

// notInStream is a type the stream does not hold, named as well as the
// built-in types allow, for messages such as "No resources found".
func notInStream(builtin map[string][]schema.GroupResource, name, group, pinned string, dotted bool) streamType {
	var grs []schema.GroupResource
	for _, gr := range builtin[name] {
		if !dotted || gr.Group == group {
			grs = append(grs, gr)
		}
	}
	if gr, ok := preferGroup(grs); ok && len(grs) > 0 {
		return streamType{Group: gr.Group, Resource: gr.Resource, Version: pinned}
	}
	return streamType{Group: group, Resource: name, Version: pinned}
}
