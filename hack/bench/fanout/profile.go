package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
)

// profileNATS records nats-server's CPU profile over a stream setup's
// churn into -nats-cpuprofile, and reports on the channel when it is
// written (nil at once without the option, or for the informers' setups).
// The churn is where goal 4 compares nats-server with the API server.
func (b *bench) profileNATS(ctx context.Context, s setup) <-chan error {
	done := make(chan error, 1)
	if b.natsProfURL == "" || !s.stream {
		done <- nil
		return done
	}
	seconds := int(math.Ceil(float64(b.o.churn) / b.o.churnRate))
	path := filepath.Join(b.o.natsProfiles, fmt.Sprintf("setup-%d-nats-server.pprof", s.seq))
	go func() { done <- fetchProfile(ctx, fmt.Sprintf("%s?seconds=%d", b.natsProfURL, seconds), path) }()
	return done
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("nats-server CPU profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("nats-server CPU profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		return errors.Join(err, f.Close())
	}
	logf("nats-server's CPU profile over the churn: %s", path)
	return f.Close()
}
