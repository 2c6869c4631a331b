package cli

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAge(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ago  time.Duration
		want string
	}{{0, "0s"}, {59 * time.Second, "59s"}, {3 * time.Hour, "3h"}, {3*time.Hour + 20*time.Minute, "3h20m"}, {50 * time.Hour, "2d2h"}, {400 * 24 * time.Hour, "400d"}} {
		if got := age(metav1.NewTime(now.Add(-c.ago)), now); got != c.want {
			t.Errorf("age %v: %q, want %q", c.ago, got, c.want)
		}
	}
	if got := age(metav1.Time{}, now); got != "<unknown>" {
		t.Errorf("zero time: %q", got)
	}
}

func TestCellText(t *testing.T) {
	for in, want := range map[string]string{"plain": "plain", "two\nlines": "two...", "bell\a": `bell\x07`, "": ""} {
		if got := cellText(in); got != want {
			t.Errorf("cellText(%q) = %q, want %q", in, got, want)
		}
	}
}
