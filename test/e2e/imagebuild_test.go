package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/image"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

// imageBuildTimeout bounds one make image: cold, it compiles every
// dependency for two platforms.
const imageBuildTimeout = 20 * time.Minute

// imageBuild is one run of make image into a directory of its own.
type imageBuild struct {
	layout  string // the OCI image layout (IMAGE_DIR)
	tarball string // IMAGE_TAR
	image   *image.Layout
	took    time.Duration
	head    string        // the commit checked out when it began
	read    platformFiles // what TestImage and the rehearsals read of it
}

// imageTests are the tests that use the shared image.
var imageTests = []string{"TestImage", "TestDeploymentRehearsal", "TestShardedRehearsal"}

// sharedImage is the first make image of the test binary, which TestImage
// and the rehearsals use; it lives in the environment's directory. When
// the run includes one of them, TestMain starts it at once in the
// background (startSharedImage): they run in parallel, after every other
// test, and would otherwise wait for it there, holding the slots of the
// parallel tests that do not need it. The build runs niced, so that it
// takes what CPU the tests before leave.
var sharedImage struct {
	once   sync.Once
	build  *imageBuild
	err    error
	cancel context.CancelFunc // ends a build still running when the tests end
	done   chan struct{}      // closed when a started build has ended
}

// buildSharedImage makes the shared image once; later callers wait for
// it.
func buildSharedImage(ctx context.Context, dir string) {
	sharedImage.once.Do(func() {
		sharedImage.build, sharedImage.err = makeImage(ctx, dir, true)
	})
}

// theImage returns the shared build, making it on first use.
func theImage(t *testing.T) *imageBuild {
	t.Helper()
	env := testenv.Get(t)
	waited := time.Now()
	buildSharedImage(context.Background(), sharedImageDir(env))
	if sharedImage.err != nil {
		t.Fatal(sharedImage.err)
	}
	if d := time.Since(waited); d > time.Second {
		t.Logf("waited %v for the shared make image (it took %v)", d.Round(time.Second), sharedImage.build.took.Round(time.Second))
	}
	return sharedImage.build
}

func sharedImageDir(env *testenv.Env) string { return filepath.Join(env.Dir(), "image-1") }

// startSharedImage starts the shared build in the background if the run
// includes a test that uses it (not under -short, where they skip).
func startSharedImage(env *testenv.Env) {
	if testing.Short() || !runSelectsAny(imageTests) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sharedImage.cancel, sharedImage.done = cancel, make(chan struct{})
	go func() {
		defer close(sharedImage.done)
		buildSharedImage(ctx, sharedImageDir(env))
	}()
}

// stopSharedImage ends a background build the tests did not wait for
// (they skipped, or failed first) and waits until it has.
func stopSharedImage() {
	if sharedImage.cancel != nil {
		sharedImage.cancel()
		<-sharedImage.done
	}
}

// runSelectsAny reports whether -test.run lets one of the top-level tests
// names run (-test.skip is not consulted: a build too many is harmless).
func runSelectsAny(names []string) bool {
	f := flag.Lookup("test.run")
	if f == nil || f.Value.String() == "" {
		return true
	}
	top, _, _ := strings.Cut(f.Value.String(), "/")
	re, err := regexp.Compile(top)
	if err != nil {
		return true
	}
	for _, n := range names {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

// makeImage runs make image in the module root, with every output under
// dir, as a user would (only the output paths differ); niced if nice.
func makeImage(ctx context.Context, dir string, nice bool) (*imageBuild, error) {
	b := &imageBuild{layout: filepath.Join(dir, "image"), tarball: filepath.Join(dir, "image.tar")}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	head, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return nil, fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	b.head = strings.TrimSpace(string(head))
	start := time.Now()
	args := []string{"image", "IMAGE_DIR=" + b.layout, "IMAGE_TAR=" + b.tarball, "IMAGE_BIN_DIR=" + filepath.Join(dir, "platforms")}
	if _, err := runMakeIn(ctx, imageBuildTimeout, nice, nil, args...); err != nil {
		return nil, err
	}
	b.took = time.Since(start)
	if b.image, err = image.OpenLayout(b.layout); err != nil {
		return nil, err
	}
	return b, nil
}

// runMake runs make with args in the module root and returns its standard
// output. env, if set, is added to this process's environment.
func runMake(t *testing.T, timeout time.Duration, env []string, args ...string) (string, error) {
	t.Helper()
	return runMakeIn(context.Background(), timeout, false, env, args...)
}

// runMakeIn is runMake under ctx, with make and what it runs niced if
// nice. Ending ctx ends them all (see processGroup).
func runMakeIn(ctx context.Context, timeout time.Duration, nice bool, env []string, args ...string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := append([]string{"make", "--no-print-directory", "-C", root}, args...)
	if p, err := exec.LookPath("nice"); nice && err == nil {
		argv = append([]string{p, "-n", "10"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	processGroup(cmd)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("make %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}
