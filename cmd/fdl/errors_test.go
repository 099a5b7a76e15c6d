package main

import (
	"fmt"
	"testing"

	"github.com/fdl-dev/fdl/refs"
)

// TestHints pins the messages fdl prints for the library errors that have
// a hint: each is the message the library built before the hints moved
// into cmd/fdl, word for word.
func TestHints(t *testing.T) {
	const id1, id2 = "0192f0c1-6c1a-7000-8000-000000000001", "0192f0c1-6c1a-7000-8000-000000000002"
	main := refs.Name("refs/heads/main")
	for _, c := range []struct {
		err  error
		want string
	}{
		{&refs.CorruptError{Ref: main, Location: "/r/refs/heads/main", Why: "it is empty"},
			"ref refs/heads/main (/r/refs/heads/main): ref is corrupt; it is empty: a ref must hold one version id and a newline; restore it from a backup, point a branch at a version again (fdl branch -f NAME REV --backwards; fdl reflog NAME shows what it held), or delete that file if the ref is not needed"},
		{&refs.MissingBranchError{Branch: "refs/heads/dev", Err: fmt.Errorf("refs/heads/dev: %w", refs.ErrNotFound)},
			"branch dev does not exist (create it with fdl branch dev REV): refs/heads/dev: no such ref"},
		{&refs.MoveRefusedError{Branch: main, Old: id1, New: id2, Undone: 2},
			"moving main from " + id1 + " to " + id2 + " refused: " + id2 + " is not a descendant of " + id1 + ", so the move would undo 2 version(s); nothing moved; to move the branch back on purpose pass --backwards (the undone versions stay in the repository and in the ref log, fdl reflog main)"},
		{&refs.MoveRaceError{Branch: main, To: id1, Now: id2},
			"moving main to " + id1 + " refused: another writer moved it to " + id2 + " first; nothing moved: look at it (fdl reflog main) and run again: push refused"},
		{&refs.NoVersionYetError{Branch: main, Where: "it's a repo"},
			"HEAD names branch main, which has no version yet: unknown revision; publish the first one: fdl checkout 'it'\\''s a repo' DIR, write to its catalog, then fdl commit and fdl push"},
		{&refs.NoSuchRevError{Rev: "nosuch", Where: "/r"},
			`revision "nosuch": no branch, tag or version id of that name in /r (list them with 'fdl branch -l', 'fdl tag -l', 'fdl log'): unknown revision`},
		{&refs.NoLogError{Name: "nosuch", Where: "/r"},
			`no ref log for "nosuch" in /r: no branch, tag or request of that name ever moved (list refs with fdl branch -l, fdl tag -l): no such ref`},
		// A hinted error inside another keeps its hint.
		{fmt.Errorf("read: %w", &refs.NoSuchRevError{Rev: "x", Where: "/r"}),
			`read: revision "x": no branch, tag or version id of that name in /r (list them with 'fdl branch -l', 'fdl tag -l', 'fdl log'): unknown revision`},
	} {
		if got := message(c.err); got != c.want {
			t.Errorf("%T:\n got %s\nwant %s", c.err, got, c.want)
		}
	}
}
