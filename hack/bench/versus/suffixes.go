package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// suffix is one row of the suffix table: what a -modes entry may add to a
// mode's name, mode[@value][+name[=value]]..., the "+" suffixes in any
// order.
type suffix struct {
	// name is how a "+" suffix is written; an "@" suffix's name says what
	// its value is.
	name string
	// at marks an "@" suffix: a mode takes the one of its row (atSuffix).
	at bool
	// required: a mode that takes the suffix needs it.
	required bool
	// value is what a "+" suffix takes after "=", as the list of known
	// suffixes shows it; "" for none.
	value string
	// check validates a value (nil: any).
	check func(v string) error
	// only tells which mode rows take the suffix (nil: every row);
	// refused is the error for the others.
	only    func(k *modeKind) bool
	refused string
	// excludes is the suffix it cannot be given with.
	excludes string
	// set records the suffix in the mode.
	set func(m *mode, v string)
	// id and label are what the suffix adds to a run's id and label, ""
	// when it adds nothing.
	id, label func(m mode) string
}

var suffixes = []suffix{
	{
		name: "i/N", at: true, required: true,
		check: func(v string) error { _, err := contract.ParseShard(v); return err },
		only:  func(k *modeKind) bool { return k.sharded },
		set:   func(m *mode, v string) { m.shard, _ = contract.ParseShard(v) },
		id:    func(m mode) string { return when(m.kind.sharded, "@"+m.shard.String()) },
		label: func(m mode) string { return when(m.kind.sharded, " "+m.shard.String()) },
	},
	{
		name: "budget", at: true,
		only: runsBridge, refused: "only bridge modes take a @budget",
		set:   func(m *mode, v string) { m.budget = v },
		id:    func(m mode) string { return shown("@", m.budget) },
		label: func(m mode) string { return shown(", publish buffer ", m.budget) },
	},
	{
		name:  "nogzip",
		set:   func(m *mode, _ string) { m.noGzip = true },
		id:    func(m mode) string { return when(m.noGzip, "+nogzip") },
		label: func(m mode) string { return when(m.noGzip, ", no gzip") },
	},
	{
		name: "gzip", excludes: "nogzip",
		only: runsBridge, refused: "only bridge modes take +gzip (an informer asks for gzip unless +nogzip)",
		set: func(m *mode, _ string) { m.gzip = true },
		id:  func(m mode) string { return when(m.gzip, "+gzip") },
		label: func(m mode) string {
			return when(m.gzip, ", gzip") + when(m.isBridge() && !m.gzip && !m.noGzip, ", no gzip (its default)")
		},
	},
	{
		name: "gogc", value: "N", check: wantsNumber,
		set:   func(m *mode, v string) { m.gogc = v },
		id:    func(m mode) string { return shown("+gogc=", m.gogc) },
		label: func(m mode) string { return shown(", GOGC=", m.gogc) },
	},
	{
		name: "procs", value: "N", check: wantsNumber,
		set:   func(m *mode, v string) { m.procs = v },
		id:    func(m mode) string { return shown("+procs=", m.procs) },
		label: func(m mode) string { return shown(", GOMAXPROCS=", m.procs) },
	},
	{
		name: "linger", value: "D", check: wantsDuration,
		only: runsBridge, refused: "only bridge modes take +linger",
		set:   func(m *mode, v string) { m.linger = v },
		id:    func(m mode) string { return shown("+linger=", m.linger) },
		label: func(m mode) string { return shown(", linger ", m.linger) },
	},
	{
		name: "config", value: "PATH", check: wantsFile,
		only: runsBridge, refused: "only bridge modes take +config",
		set:   func(m *mode, v string) { m.config = v },
		id:    func(m mode) string { return when(m.config != "", "+config="+filepath.Base(m.config)) },
		label: func(m mode) string { return when(m.config != "", ", rules "+filepath.Base(m.config)) },
	},
	{
		name:  "cbor",
		set:   func(m *mode, _ string) { m.cbor = true },
		id:    func(m mode) string { return when(m.cbor, "+cbor") },
		label: func(m mode) string { return when(m.cbor, ", CBOR") },
	},
	{
		name: "exe", value: "PATH", check: wantsBinary,
		set:   func(m *mode, v string) { m.exe = v },
		id:    func(m mode) string { return when(m.exe != "", "+exe="+filepath.Base(m.exe)) },
		label: func(m mode) string { return shown(", built as ", m.exe) },
	},
}

func runsBridge(k *modeKind) bool { return k.runs.bridge() }

func wantsNumber(v string) error {
	if _, err := strconv.Atoi(v); err != nil {
		return errors.New("wants a number")
	}
	return nil
}

func wantsDuration(v string) error {
	if _, err := time.ParseDuration(v); err != nil {
		return fmt.Errorf("wants a duration: %w", err)
	}
	return nil
}

func wantsFile(v string) error {
	if _, err := os.Stat(v); err != nil {
		return fmt.Errorf("wants a configuration file: %w", err)
	}
	return nil
}

func wantsBinary(v string) error {
	if _, err := os.Stat(v); err != nil {
		return fmt.Errorf("wants a versus binary: %w", err)
	}
	return nil
}

// when is s if cond holds, else "".
func when(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

// shown is prefix and v, or "" for no v.
func shown(prefix, v string) string { return when(v != "", prefix+v) }

// plusSuffix is the "+" suffix called name, or nil.
func plusSuffix(name string) *suffix {
	for i := range suffixes {
		if s := &suffixes[i]; !s.at && s.name == name {
			return s
		}
	}
	return nil
}

// atSuffix is what mode row k takes after "@": the first "@" suffix that
// takes the row (a shard mode's shard), else the last (a bridge's publish
// buffer), whose refusal says why the row takes none.
func (k *modeKind) atSuffix() *suffix {
	var last *suffix
	for i := range suffixes {
		if s := &suffixes[i]; s.at {
			if s.only(k) {
				return s
			}
			last = s
		}
	}
	return last
}

// knownSuffixes lists the "+" suffixes as they are written.
func knownSuffixes() string {
	var out []string
	for _, s := range suffixes {
		if !s.at {
			out = append(out, "+"+s.name+shown("=", s.value))
		}
	}
	return strings.Join(out, ", ")
}

// selectModes reads -modes: comma-separated mode[@value][+suffix]...; none
// is every mode once.
func selectModes(only string) ([]mode, error) {
	if only == "" {
		out := make([]mode, len(modeTable))
		for i := range modeTable {
			out[i] = mode{kind: &modeTable[i], label: modeTable[i].label}
		}
		return out, nil
	}
	var out []mode
	for _, s := range strings.Split(only, ",") {
		m, err := parseMode(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// parseMode reads one -modes entry. The "+" suffixes' values are checked
// first, in the order written; then the mode's name, its "@" value, and
// whether the mode takes each suffix, in the table's order.
func parseMode(s string) (mode, error) {
	parts := strings.Split(s, "+")
	head := parts[0]
	given, err := plusValues(head, parts[1:])
	if err != nil {
		return mode{}, err
	}
	name, at, _ := strings.Cut(head, "@")
	k := kindNamed(name)
	if k == nil {
		return mode{}, fmt.Errorf("unknown mode %q (known: %s)", name, modeNames())
	}
	if sx := k.atSuffix(); at != "" || sx.required {
		if err := sx.validate(at); err != nil {
			return mode{}, fmt.Errorf("mode %q: want %s@%s: %w", name, name, sx.name, err)
		}
		given[sx.name] = at
	}
	m := mode{kind: k, label: k.label}
	for i := range suffixes {
		sx := &suffixes[i]
		v, ok := given[sx.name]
		if !ok {
			continue
		}
		if err := sx.admit(k, given); err != nil {
			return mode{}, fmt.Errorf("mode %q: %w", name, err)
		}
		sx.set(&m, v)
	}
	for _, sx := range suffixes {
		m.label += sx.label(m)
	}
	return m, nil
}

// plusValues reads the "+" suffixes after head, by name; a suffix given
// twice keeps its last value.
func plusValues(head string, parts []string) (map[string]string, error) {
	given := map[string]string{}
	for _, p := range parts {
		key, v, hasValue := strings.Cut(p, "=")
		sx := plusSuffix(key)
		if sx == nil {
			return nil, fmt.Errorf("mode %q: unknown suffix +%s (known: %s)", head, key, knownSuffixes())
		}
		err := sx.validate(v)
		if sx.value == "" && hasValue {
			err = errors.New("takes no value")
		}
		if err != nil {
			return nil, fmt.Errorf("mode %q: +%s= %w", head, key, err)
		}
		given[key] = v
	}
	return given, nil
}

func (s *suffix) validate(v string) error {
	if s.check == nil {
		return nil
	}
	return s.check(v)
}

// admit tells whether mode row k takes the suffix, given the others.
func (s *suffix) admit(k *modeKind, given map[string]string) error {
	if _, both := given[s.excludes]; both && s.excludes != "" {
		return fmt.Errorf("+%s or +%s, not both", s.name, s.excludes)
	}
	if s.only != nil && !s.only(k) {
		return errors.New(s.refused)
	}
	return nil
}
