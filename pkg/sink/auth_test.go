package sink

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/kubebridge/kubebridge/internal/natstest"
)

func startAuthServer(t *testing.T, opts *server.Options) string {
	t.Helper()
	return natstest.Server(t, *opts).ClientURL()
}

// connectOnce tries one connection with a short deadline: Connect retries
// until its context ends, so a refused credential shows as a timeout.
func connectOnce(t *testing.T, url string, a Auth) error {
	t.Helper()
	opts, err := a.Options()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	nc, err := Connect(ctx, url, opts...)
	if err == nil {
		nc.Close()
	}
	return err
}

func TestAuthUserPassword(t *testing.T) {
	url := startAuthServer(t, &server.Options{Username: "bridge", Password: "s3cret"})
	if err := connectOnce(t, url, Auth{User: "bridge", Password: "s3cret"}); err != nil {
		t.Errorf("right password refused: %v", err)
	}
	if err := connectOnce(t, url, Auth{User: "bridge", Password: "wrong"}); err == nil {
		t.Error("wrong password accepted")
	}
}

func TestAuthToken(t *testing.T) {
	url := startAuthServer(t, &server.Options{Authorization: "t0ken"})
	if err := connectOnce(t, url, Auth{Token: "t0ken"}); err != nil {
		t.Errorf("right token refused: %v", err)
	}
	if err := connectOnce(t, url, Auth{}); err == nil {
		t.Error("no token accepted")
	}
}

func TestAuthNKeySeedFile(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	path := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	url := startAuthServer(t, &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	if err := connectOnce(t, url, Auth{NKeyFile: path}); err != nil {
		t.Errorf("registered NKey refused: %v", err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherPath := filepath.Join(t.TempDir(), "other.nk")
	if err := os.WriteFile(otherPath, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := connectOnce(t, url, Auth{NKeyFile: otherPath}); err == nil {
		t.Error("unregistered NKey accepted")
	}
	if _, err := (Auth{NKeyFile: filepath.Join(t.TempDir(), "missing")}).Options(); err == nil {
		t.Error("missing seed file accepted")
	}
}
