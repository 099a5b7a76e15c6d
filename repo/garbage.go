package repo

import (
	"context"
	"fmt"
	"strings"

	"github.com/fdl-dev/fdl/history"
)

// DeleteGarbage deletes one object gc found nothing keeps: the one path
// by which gc deletes a repository's objects (package gc; the rule's row
// in docs/architecture.md, "Where each rule lives"). It refuses any key
// outside data/, versions/ and index/packs/ (gc never deletes anything
// else: docs/spec.md §16), then calls check, if not nil, with the key —
// gc's own guard: the key must be one its deletion intent lists (§16.1) —
// and deletes only if check returns nil. A deletion under versions/ drops
// the Repo's listings of versions/. Deleting a key that is gone is no
// error. Errors: the refusal (nothing deleted), check's, the store's
// (naming the key).
func (r *Repo) DeleteGarbage(ctx context.Context, key string, check func(key string) error) error {
	if !strings.HasPrefix(key, DataPrefix) && !strings.HasPrefix(key, VersionsPrefix) && !strings.HasPrefix(key, history.PacksPrefix) {
		return fmt.Errorf("gc: refusing to delete %s: gc deletes only under %s, %s and %s", key, DataPrefix, VersionsPrefix, history.PacksPrefix)
	}
	if check != nil {
		if err := check(key); err != nil {
			return err
		}
	}
	err := r.st.Delete(ctx, key)
	if strings.HasPrefix(key, VersionsPrefix) {
		r.forgetIDs()
	}
	if err != nil {
		return fmt.Errorf("gc: delete %s: %w", key, err)
	}
	return nil
}
