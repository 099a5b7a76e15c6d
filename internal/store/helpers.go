package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ReadAll reads the whole object at key (for small objects: refs, records).
func ReadAll(ctx context.Context, s Store, key string) ([]byte, Token, error) {
	r, tok, err := s.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	if bb, ok := r.(*bytesBody); ok {
		return bb.b, tok, nil // already in memory: no second copy
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, "", err
	}
	return b, tok, nil
}

// The helpers below are for Store implementations: every one checks its
// arguments and lists the same way.

// Begin checks ctx and key at the start of a Store method: an invalid key
// is ErrInvalidKey (CheckKey), a done ctx is ctx's error wrapped with key.
func Begin(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// EmitSorted sorts a listing by key (byte order) and calls fn for each
// entry, stopping at fn's error or ctx's: List for a store that collects
// its listing first.
func EmitSorted(ctx context.Context, infos []ObjectInfo, fn func(ObjectInfo) error) error {
	slices.SortFunc(infos, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// ContextReader returns a reader over r that fails with ctx's error once
// ctx is done, so a long copy stops when it is cancelled.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// AddSize adds the size n of an object to the sum total, both in bytes,
// where -1 means unknown (an http(s) listing does not tell sizes): the sum
// of a known and an unknown size is unknown (-1), never a figure made
// smaller by the -1.
func AddSize(total, n int64) int64 {
	if total < 0 || n < 0 {
		return -1
	}
	return total + n
}

// bytesBody is an object's content already in memory, as a store's Get
// returns it (BytesBody).
type bytesBody struct {
	*bytes.Reader
	b []byte
}

func (*bytesBody) Close() error { return nil }

// BytesBody returns b as the body a Get returns: ReadAll hands b itself
// back instead of copying it. The caller must not change b afterwards.
func BytesBody(b []byte) io.ReadCloser { return &bytesBody{Reader: bytes.NewReader(b), b: b} }
