// Package testenv lets a test say that a part it needs is missing: it skips on a
// developer's machine and fails in CI, where scripts/test.sh sets VRAM_REQUIRE_ALL=1,
// so CI can never pass by silently losing a test.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// RequireAllEnv is the variable that turns skips into failures.
const RequireAllEnv = "VRAM_REQUIRE_ALL"

// Unavailable ends t: a failure when RequireAllEnv is set, a skip otherwise.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireAllEnv) != "" {
		t.Fatalf("%s, and %s forbids skipping", msg, RequireAllEnv)
	}
	t.Skip(msg)
}
