// Package cli is the kubebridge command: a kubectl-like view of a
// kubebridge stream for people. It owns the subcommands and their output:
//
//   - get: the current objects of a type, rebuilt from the stream with
//     pkg/consume and printed as kubectl prints them (table, wide, json,
//     yaml, name);
//   - watch: live events, one line each, with an optional diff of updates;
//   - verify: a replay of the whole stream through pkg/consume's contract
//     checks plus framing and id checks, optionally compared with the
//     apiserver's lists within the scope the begin markers say (a type's
//     rules included: internal/rules projects and matches the list); it
//     exits non-zero when the contract is broken.
//
// Connections follow the nats CLI: -s/--server, NATS_URL, --creds,
// --nkey, --user/--password, TLS files and nats CLI contexts (--context,
// or the one `nats context select` chose). cmd/kubebridge is its thin main.
//
// It is a consumer of the stream. Of this module it imports the consumer's
// side (pkg/consume, pkg/contract, pkg/streamread), pkg/sink for its
// NATS connection settings (Auth, RedactURLs) and internal/rules to read a
// type's rules as the bridge does; never internal/bridge.
package cli
