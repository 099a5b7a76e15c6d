package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// fetchData returns a local copy of a data or delete file of the
// repository that a diff must read (p: its path as the catalog resolves
// it), fetched once into the diff's temporary folder. A diff reads only
// the files whose rows differ between its two sides and that it cannot
// count from the catalog alone (docs/spec.md §25), so this is what the diff
// shows, not the lake. Errors: p lies outside the repository's data folder
// (an imported lake's own bucket), the store's.
func (c *catalogCache) fetchData(ctx context.Context, p string) (string, error) {
	n, err := c.r.Normaliser()
	if err != nil {
		return "", err
	}
	pl, err := n.Place(p)
	if err != nil {
		return "", err
	}
	if pl.Key == "" {
		return "", fmt.Errorf("%s lies outside the repository, which fdl does not read it from", p)
	}
	sum := sha256.Sum256([]byte(pl.Key))
	dst := filepath.Join(c.tmp, "files", hex.EncodeToString(sum[:12])+filepath.Ext(pl.Key))
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	rc, _, err := c.r.st.Get(ctx, pl.Key)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", pl.Key, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".fetch-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, rc)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", pl.Key, err)
	}
	return dst, os.Rename(tmp.Name(), dst)
}
