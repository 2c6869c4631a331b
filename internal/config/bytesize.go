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
