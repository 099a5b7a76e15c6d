package main

import (
	"strings"
	"testing"
)

// TestInterruptMirror: a mirror interrupted (Ctrl-C) while it copies
// objects, and again just before it moves refs, stops with exit code 130
// at the next step boundary; the destination's refs are each absent or
// the source's, verify finds nothing wrong, and a second run completes
// the mirror. (A step takes well under a second here, so the 50 ms the
// signal is given to arrive ends inside the step it was sent from.)
func TestInterruptMirror(t *testing.T) {
	t.Parallel()
	src, _ := mirrorSource(t)
	want := mirrorRefs(t, src)
	for _, step := range []string{"mirror:data", "mirror:log"} {
		dst := t.TempDir() + "/m"
		code, out := fdlProc(t, []string{"FDL_TEST_INTERRUPT_AT=" + step}, "mirror", src, dst)
		if code != exitInterrupt {
			t.Fatalf("mirror interrupted at %s: exit %d, want %d\n%s", step, code, exitInterrupt, out)
		}
		for _, l := range strings.Split(mirrorRefs(t, dst), "\n") {
			if l != "" && !strings.Contains(want, l) {
				t.Errorf("after Ctrl-C at %s the destination holds %s, not the source's", step, l)
			}
		}
		if code, out := fdlProc(t, nil, "--repo", dst, "verify"); code != 0 {
			t.Errorf("verify after Ctrl-C at %s: exit %d\n%s", step, code, out)
		}
		if code, _, out := mirrorRun(t, nil, src, dst); code != 0 {
			t.Fatalf("mirror again after Ctrl-C at %s: exit %d\n%s", step, code, out)
		}
		if got := mirrorRefs(t, dst); got != want {
			t.Errorf("after Ctrl-C at %s and a rerun, the destination's refs are\n%s\nwant\n%s", step, got, want)
		}
	}
}
