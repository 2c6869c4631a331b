package consume

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudevents/sdk-go/v2/types"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// What a reader takes from markers' extensions: a begin marker's scope,
// a marker's shard, an end marker's count and unpublished objects.

// scopeOf reads the scope extensions of a begin marker (contract §1).
func scopeOf(ext func(string) string) (Scope, error) {
	s := Scope{LabelSelector: ext(contract.ExtScopeLabels), FieldSelector: ext(contract.ExtScopeFields), Match: ext(contract.ExtScopeMatch)}
	if ns := ext(contract.ExtScopeNamespaces); ns != "" {
		s.Namespaces = strings.Split(ns, ",")
	}
	v := ext(contract.ExtScopeIgnoreFields)
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s.IgnoreFields); err != nil {
		return Scope{}, fmt.Errorf("%s %q is not a JSON array of paths: %w", contract.ExtScopeIgnoreFields, v, err)
	}
	for _, p := range s.IgnoreFields {
		if len(p) == 0 {
			return Scope{}, fmt.Errorf("%s %q has an empty path", contract.ExtScopeIgnoreFields, v)
		}
	}
	return s, nil
}

// shardOf reads the shard extension: the zero Shard when it is absent or
// 0/1.
func shardOf(ext func(string) string) (contract.Shard, error) {
	v := ext(contract.ExtShard)
	if v == "" {
		return contract.Shard{}, nil
	}
	return contract.ParseShard(v)
}

// parseEnd reads an end marker's count and the objects it did not publish.
func (d *decoder) parseEnd(ev *Event, ext func(string) string) error {
	if v, ok := ev.CloudEvent.Extensions()[contract.ExtSnapshotCount]; ok {
		n, err := types.ToInteger(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s %v is not a count", contract.ExtSnapshotCount, v)
		}
		ev.SnapshotCount = int(n)
	}
	for _, suffix := range strings.Fields(ext(contract.ExtUnpublished)) {
		ns, name, err := contract.ParseObjectSuffix(suffix)
		if err != nil {
			return fmt.Errorf("%s: %w", contract.ExtUnpublished, err)
		}
		if ns == "" {
			ev.Unpublished = append(ev.Unpublished, name)
			continue
		}
		ev.Unpublished = append(ev.Unpublished, ns+"/"+name)
	}
	return nil
}
