package mirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
)

// openDest opens the destination at url, or makes it with the source's
// fdl.json (repo.InitCopy, HEAD naming the branch the source's HEAD
// names) where there is no repository yet. A repository there must be
// the source's own in another place: same name, data_path, creation time
// and default branch (*OtherRepositoryError otherwise), and not the
// source's very location (*SameRepositoryError). A repository another
// mirror made there while this one looked (two first mirrors at once) is
// taken as found, not refused.
func openDest(ctx context.Context, src *repo.Repo, url string, o repo.Options, res *Result) (*repo.Repo, error) {
	dst, err := repo.Open(ctx, url, o)
	var nr *repo.NotRepositoryError
	switch {
	case errors.As(err, &nr):
		if nr.ReadOnly {
			return nil, fmt.Errorf("mirror to %s: %w: a mirror writes its destination; give its folder or object-store URL", store.RedactURL(url), store.ErrReadOnly)
		}
		settings, _, rerr := store.ReadAll(ctx, src.Store(), repo.ConfigKey)
		if rerr != nil {
			return nil, fmt.Errorf("mirror from %s: read %s: %w", src.Where(), repo.ConfigKey, rerr)
		}
		head, herr := src.Head(ctx)
		if herr != nil {
			head = refs.Name(refs.HeadsPrefix + src.Config().DefaultBranch)
		}
		dst, err = repo.InitCopy(ctx, url, settings, head, o)
		if err != nil && (errors.Is(err, store.ErrExist) || errors.Is(err, repo.ErrNotEmpty)) {
			// Another mirror made it between our look and our write:
			// take it as any repository found there (checked below).
			if again, oerr := repo.Open(ctx, url, o); oerr == nil {
				dst, err = again, nil
				break
			}
		}
		if err != nil {
			return nil, err
		}
		res.Created = true
	case err != nil:
		return nil, err
	}
	res.Destination = dst.Where()
	if dst.Store().Location("") == src.Store().Location("") {
		dst.Close()
		return nil, &SameRepositoryError{Where: res.Destination}
	}
	if a, b := src.Config(), dst.Config(); a.Name != b.Name || a.DataPath != b.DataPath || !a.CreatedAt.Equal(b.CreatedAt) || a.DefaultBranch != b.DefaultBranch {
		dst.Close()
		return nil, &OtherRepositoryError{Source: src.Where(), Dest: res.Destination, SourceConfig: a, DestConfig: b}
	}
	if dst.ReadOnly() {
		dst.Close()
		return nil, fmt.Errorf("mirror to %s: %w: a mirror writes its destination; give its folder or object-store URL", res.Destination, store.ErrReadOnly)
	}
	return dst, nil
}
