// Package config owns the bridge's configuration: every setting comes from
// an environment variable, read with go-envconfig, checked as a whole so
// that every problem is reported at once, and described for --help from the
// same struct tags. The types to watch and their publishing rules may come
// instead from a versioned configuration file (BRIDGE_CONFIG, file.go),
// decoded strictly, whose problems are reported with the environment's.
//
// It serves the producer: cmd/bridge and internal/bridge read the
// configuration it loads. Of this module it imports internal/rules, which
// compiles the file's rules, and pkg/contract.
package config
