package testutil

import (
	"os"
	"testing"
)

// SoakEnv is the environment variable `make soak` sets (FDL_SOAK=1) to run
// the long forms of the tests that keep a shorter form in `make test`.
const SoakEnv = "FDL_SOAK"

// Soak reports whether the long forms run (SoakEnv set, not "0"). When they
// do not, it logs what the short form leaves to `make soak` (what: the
// cases, chains or rounds left out), so a -v run says it.
func Soak(t testing.TB, what string) bool {
	t.Helper()
	if v := os.Getenv(SoakEnv); v != "" && v != "0" {
		return true
	}
	t.Logf("short form: %s run under %s=1 (make soak)", what, SoakEnv)
	return false
}
