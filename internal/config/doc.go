// Package config owns the bridge's configuration: every setting comes from
// an environment variable, read with go-envconfig, checked as a whole so
// that every problem is reported at once, and described for --help from the
// same struct tags.
//
// It serves the producer: cmd/bridge and internal/bridge read the
// configuration it loads. Of this module it imports pkg/contract only.
package config
