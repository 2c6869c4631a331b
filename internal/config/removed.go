package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ByteSize is a number of bytes written as a Kubernetes quantity: 64Mi,
// 500k, 1G or a plain number.
type ByteSize int64

// EnvDecode implements envconfig.Decoder.
func (b *ByteSize) EnvDecode(val string) error {
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return fmt.Errorf("not a byte quantity (e.g. 64Mi, 500k, 1048576): %w", err)
	}
	n, ok := q.AsInt64()
	if !ok {
		return fmt.Errorf("%s is not a whole number of bytes", val)
	}
	*b = ByteSize(n)
	return nil
}

// removedVariables are variables older versions read, with what replaces them.
var removedVariables = map[string]string{
	"BRIDGE_QUEUE_SIZE": "changes now wait per object without a count limit (memory is bounded by the number of objects); BRIDGE_PUBLISH_BUFFER_BYTES bounds the encoded messages",
}

// Removed lists, one line each, variables that are set but no longer read.
func Removed(lookup func(string) (string, bool)) []string {
	var out []string
	for k, why := range removedVariables {
		if v, ok := lookup(k); ok && v != "" {
			out = append(out, fmt.Sprintf("%s is set but no longer used: %s", k, why))
		}
	}
	return out
}
