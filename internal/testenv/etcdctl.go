package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Etcdctl runs the etcdctl binary against this environment's etcd with
// the given arguments and returns its stdout. A non-zero exit becomes an
// error carrying stderr.
func (e *Env) Etcdctl(ctx context.Context, args ...string) ([]byte, error) {
	args = append([]string{"--endpoints=" + e.EtcdEndpoint()}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, binEtcdctl), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("etcdctl %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// EtcdRevision returns etcd's current revision.
func (e *Env) EtcdRevision(ctx context.Context) (int64, error) {
	out, err := e.Etcdctl(ctx, "endpoint", "status", "-w", "json")
	if err != nil {
		return 0, err
	}
	var st []struct {
		Status struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
		} `json:"Status"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, fmt.Errorf("parse etcdctl endpoint status: %w: %s", err, out)
	}
	if len(st) != 1 || st[0].Status.Header.Revision == 0 {
		return 0, fmt.Errorf("unexpected etcdctl endpoint status output: %s", out)
	}
	return st[0].Status.Header.Revision, nil
}

// Compact compacts etcd's history up to its current revision and waits for
// the compaction to be applied, so that watches and lists from any older
// resourceVersion fail with "410 Gone / too old resource version". It
// returns the revision compacted to. Compacting again without intervening
// writes is not an error.
func (e *Env) Compact(ctx context.Context) (int64, error) {
	rev, err := e.EtcdRevision(ctx)
	if err != nil {
		return 0, err
	}
	_, err = e.Etcdctl(ctx, "compact", strconv.FormatInt(rev, 10), "--physical")
	if err != nil && !strings.Contains(err.Error(), "required revision has been compacted") {
		return 0, err
	}
	return rev, nil
}
