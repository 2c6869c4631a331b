package e2e

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// throughout runs check every interval for d and returns its first error,
// nil if it held the whole time. It is for a fault whose length is the
// behaviour under test (an outage, a cut link): what must hold while it
// lasts. Tests wait for a condition with wait.PollUntilContextTimeout;
// throughout is the same poll that must not end early.
func throughout(d, interval time.Duration, check func() error) error {
	var failed error
	// The poll ends at d with every check passed, or at the first that
	// failed.
	_ = wait.PollUntilContextTimeout(context.Background(), interval, d, true, func(context.Context) (bool, error) {
		failed = check()
		return failed != nil, nil
	})
	return failed
}
