package config

import "fmt"

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
