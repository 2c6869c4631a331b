package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// natsContext is the part of a nats CLI context file
// (~/.config/nats/context/<name>.json) a connection needs. Reading the
// file directly costs less than depending on the nats CLI's libraries.
type natsContext struct {
	URL      string `json:"url"`
	Token    string `json:"token"`
	User     string `json:"user"`
	Password string `json:"password"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	CA       string `json:"ca"`
	JSDomain string `json:"jetstream_domain"`
}

// loadNATSContext reads the context name, or when name is empty the one
// `nats context select` chose (<config>/nats/context.txt), or none. A
// context named but missing is an error, as in the nats CLI.
func loadNATSContext(name string, getenv func(string) string) (natsContext, error) {
	dir := natsConfigDir(getenv)
	if dir == "" {
		if name != "" {
			return natsContext{}, fmt.Errorf("nats context %q: no home directory to read it from", name)
		}
		return natsContext{}, nil
	}
	if name == "" {
		b, err := os.ReadFile(filepath.Join(dir, "context.txt"))
		if errors.Is(err, os.ErrNotExist) {
			return natsContext{}, nil
		}
		if err != nil {
			return natsContext{}, fmt.Errorf("selected nats context: %w", err)
		}
		if name = strings.TrimSpace(string(b)); name == "" {
			return natsContext{}, nil
		}
	}
	if strings.Contains(name, "..") || strings.ContainsRune(name, os.PathSeparator) || strings.ContainsRune(name, '/') {
		return natsContext{}, fmt.Errorf("invalid nats context name %q", name)
	}
	path := filepath.Join(dir, "context", name+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		return natsContext{}, fmt.Errorf("nats context %q: %w", name, err)
	}
	var c natsContext
	if err := json.Unmarshal(b, &c); err != nil {
		return natsContext{}, fmt.Errorf("nats context %q (%s): %w", name, path, err)
	}
	home := getenv("HOME")
	for _, p := range []*string{&c.Creds, &c.NKey, &c.Cert, &c.Key, &c.CA} {
		*p = expandHome(*p, home)
	}
	return c, nil
}

// natsConfigDir is where the nats CLI keeps its contexts:
// $XDG_CONFIG_HOME/nats, else ~/.config/nats.
func natsConfigDir(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "nats")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "nats")
	}
	return ""
}

// expandHome expands a leading ~/ as the nats CLI does for file paths.
func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p
}
