package ducklake

import "testing"

// SimplePathSQL is simplePath, for the external tests.
const SimplePathSQL = simplePath

// EqualsFull is equalsFull, for the external tests: inc (what FreezeOnto
// wrote from lite, info its report) equals lite's full conversion (written
// to full), table by table and value by value; it returns inc as the next
// base.
func EqualsFull(t *testing.T, lite, inc, full string, info FreezeInfo) FreezeBase {
	t.Helper()
	return equalsFull(t, lite, inc, full, info)
}

// FullBase is fullBase, for the external tests.
func FullBase(t *testing.T, lite, path string) FreezeBase {
	t.Helper()
	return fullBase(t, lite, path)
}

// PullEqualsCheckout is pullEqualsCheckout, for the external tests.
func PullEqualsCheckout(t *testing.T, work, head string, base FreezeBase) DeltaInfo {
	t.Helper()
	return pullEqualsCheckout(t, work, head, base)
}
