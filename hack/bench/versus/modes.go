package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

const benchNamespace = "bench-versus"

// mode is one way of caching the ConfigMaps, run in its own child process.
type mode struct {
	name  string
	label string
	// budget is the bridge's BRIDGE_PUBLISH_BUFFER_BYTES; empty is the
	// default.
	budget string
	// noGzip sets rest.Config.DisableCompression: the apiserver's
	// responses are not gzipped (client-go asks for gzip by default).
	noGzip bool
	// gzip is a bridge mode's BRIDGE_KUBE_COMPRESSION=true (mode+gzip):
	// the bridge turns compression off unless asked.
	gzip bool
	// gogc, if set, is the child's GOGC (mode+gogc=N).
	gogc string
	// procs, if set, is the child's GOMAXPROCS (mode+procs=N).
	procs string
	// linger, if set, is a bridge mode's BRIDGE_PUBLISH_LINGER
	// (mode+linger=D).
	linger string
	// shard is the part of the objects of typed-shard and bridge-shard
	// (mode@i/N).
	shard shard.Shard
	// exe, if set, is the versus binary the child runs from
	// (mode+exe=PATH): another build, say one of an earlier commit, so
	// that two builds of the bridge alternate in one invocation.
	exe string
}

var modes = []mode{
	{name: "baseline", label: "baseline: clients only, no informer"},
	{name: "typed", label: "typed informer (protobuf)"},
	{name: "typed-transform", label: "typed informer + transform"},
	{name: "dynamic", label: "dynamic informer (unstructured, JSON)"},
	{name: "dynamic-transform", label: "dynamic informer + transform"},
	{name: "typed-shard", label: "typed informer, one shard"},
	{name: "publish-raw", label: "informer, then its objects published raw (the snapshot's floor)"},
	{name: "publish-raw-items", label: "informer, then the bridge's snapshot items for its objects published raw"},
	{name: "bridge-typed", label: "bridge, typed path"},
	{name: "bridge-dynamic", label: "bridge, dynamic path"},
	{name: "bridge-shard", label: "bridge, typed path, one shard"},
}

// id names a mode run: its name, with the budget if one is set.
func (m mode) id() string {
	id := m.name
	if m.budget != "" {
		id += "@" + m.budget
	}
	if m.sharded() {
		id += "@" + m.shard.String()
	}
	if m.noGzip {
		id += "+nogzip"
	}
	if m.gzip {
		id += "+gzip"
	}
	if m.gogc != "" {
		id += "+gogc=" + m.gogc
	}
	if m.procs != "" {
		id += "+procs=" + m.procs
	}
	if m.linger != "" {
		id += "+linger=" + m.linger
	}
	if m.exe != "" {
		id += "+exe=" + filepath.Base(m.exe)
	}
	return id
}

func (m mode) isBridge() bool { return strings.HasPrefix(m.name, "bridge-") }

// publishes reports whether m's child writes to its stream (streamName):
// a bridge, or publish-raw and publish-raw-items.
func (m mode) publishes() bool { return m.isBridge() || strings.HasPrefix(m.name, "publish-raw") }

// sharded reports whether m holds one shard's part of the objects.
func (m mode) sharded() bool { return m.name == "typed-shard" || m.name == "bridge-shard" }

func modeNames() string {
	var n []string
	for _, m := range modes {
		n = append(n, m.name)
	}
	return strings.Join(n, ",")
}

func selectModes(only string) ([]mode, error) {
	if only == "" {
		return modes, nil
	}
	var out []mode
	for _, name := range strings.Split(only, ",") {
		// mode[@budget|@i/N][+nogzip|+gzip][+gogc=N][+procs=N][+linger=D],
		// the suffixes in any order.
		suffixes := strings.Split(strings.TrimSpace(name), "+")
		name = suffixes[0]
		var noGzip, gzip bool
		var gogc, procs, linger, exe string
		for _, suf := range suffixes[1:] {
			key, val, _ := strings.Cut(suf, "=")
			if key == "exe" {
				if _, err := os.Stat(val); err != nil {
					return nil, fmt.Errorf("mode %q: +exe= wants a versus binary: %w", name, err)
				}
				exe = val
				continue
			}
			if key == "linger" {
				if _, err := time.ParseDuration(val); err != nil {
					return nil, fmt.Errorf("mode %q: +linger= wants a duration: %w", name, err)
				}
				linger = val
				continue
			}
			if _, err := strconv.Atoi(val); key != "nogzip" && key != "gzip" && err != nil {
				return nil, fmt.Errorf("mode %q: +%s= wants a number", name, key)
			}
			switch key {
			case "nogzip":
				noGzip = true
			case "gzip":
				gzip = true
			case "gogc":
				gogc = val
			case "procs":
				procs = val
			default:
				return nil, fmt.Errorf("mode %q: unknown suffix +%s (known: +nogzip, +gzip, +gogc=N, +procs=N, +linger=D, +exe=PATH)", name, key)
			}
		}
		// After "@": a shard mode's shard, a bridge mode's publish buffer.
		name, at, _ := strings.Cut(name, "@")
		found := false
		for _, m := range modes {
			if m.name == name {
				switch {
				case m.sharded():
					sh, err := contract.ParseShard(at)
					if err != nil {
						return nil, fmt.Errorf("mode %q: want %s@i/N: %w", name, name, err)
					}
					m.shard = sh
					m.label += " " + sh.String()
				case at != "" && !m.isBridge():
					return nil, fmt.Errorf("mode %q: only bridge modes take a @budget", name)
				case at != "":
					m.budget = at
					m.label += ", publish buffer " + at
				}
				switch {
				case noGzip && gzip:
					return nil, fmt.Errorf("mode %q: +gzip or +nogzip, not both", name)
				case gzip && !m.isBridge():
					return nil, fmt.Errorf("mode %q: only bridge modes take +gzip (an informer asks for gzip unless +nogzip)", name)
				case noGzip:
					m.noGzip = true
					m.label += ", no gzip"
				case gzip:
					m.gzip = true
					m.label += ", gzip"
				case m.isBridge():
					m.label += ", no gzip (its default)"
				}
				if gogc != "" {
					m.gogc = gogc
					m.label += ", GOGC=" + gogc
				}
				if procs != "" {
					m.procs = procs
					m.label += ", GOMAXPROCS=" + procs
				}
				if linger != "" {
					if !m.isBridge() {
						return nil, fmt.Errorf("mode %q: only bridge modes take +linger", name)
					}
					m.linger = linger
					m.label += ", linger " + linger
				}
				if exe != "" {
					m.exe = exe
					m.label += ", built as " + exe
				}
				out = append(out, m)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown mode %q (known: %s)", name, modeNames())
		}
	}
	return out, nil
}

// streamName is the stream of mode m (one per mode: a mode listed again
// has it removed first, see removeStream); stream names allow letters,
// digits, "_" and "-".
func streamName(m mode) string { return "VERSUS_" + strings.ToUpper(token(m.id())) }

// token maps a mode run's id to letters, digits and "_", valid in stream
// names and subject tokens alike.
func token(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
