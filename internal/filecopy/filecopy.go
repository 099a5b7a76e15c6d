// Package filecopy copies a file and computes the SHA-256 of its bytes in
// one read: commit's copy of a working catalog and checkout's copy of a
// version's catalog both need the digest, and reading a file of hundreds
// of MiB twice would cost as much as the copy itself.
package filecopy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
)

// bufSize is the copy buffer (one per Copy): large enough that the read
// and write calls cost little next to the bytes.
const bufSize = 1 << 20

// progressEvery is how many bytes pass between calls of a progress
// function.
const progressEvery = 4 << 20

// Copy writes the bytes of src, from its current offset to its end, to
// dst (an empty file open for writing), and returns how many bytes they
// are and their lower-case hex SHA-256, reading src once. Where the file
// system can share the bytes (a reflink: FICLONE on Linux, on btrfs or
// XFS), dst becomes a copy-on-write clone of src and src is read only for
// the digest; elsewhere the bytes are read, hashed and written in one
// pass. Memory holds one 1 MiB buffer. progress, if not nil, is called
// with the bytes done so far, every 4 MiB and at the end. ctx stops the
// copy (its error is returned). dst is not synced: the caller fsyncs it.
func Copy(ctx context.Context, dst, src *os.File, progress func(done int64)) (int64, string, error) {
	h := sha256.New()
	if clone(dst, src) {
		n, err := hashAll(ctx, h, src, progress)
		if err != nil {
			return 0, "", fmt.Errorf("read %s: %w", src.Name(), err)
		}
		return n, hex.EncodeToString(h.Sum(nil)), nil
	}
	buf := make([]byte, bufSize)
	var n, last int64
	for {
		if err := ctx.Err(); err != nil {
			return n, "", err
		}
		k, rerr := src.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			if _, err := dst.Write(buf[:k]); err != nil {
				return n, "", fmt.Errorf("write %s: %w", dst.Name(), err)
			}
			n += int64(k)
			if progress != nil && n-last >= progressEvery {
				last = n
				progress(n)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, "", fmt.Errorf("read %s: %w", src.Name(), rerr)
		}
	}
	if progress != nil {
		progress(n)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// Digest returns the size and lower-case hex SHA-256 of the bytes r gives,
// reading them once with one 1 MiB buffer; progress as for Copy.
func Digest(ctx context.Context, r io.Reader, progress func(done int64)) (int64, string, error) {
	h := sha256.New()
	n, err := hashAll(ctx, h, r, progress)
	if err != nil {
		return n, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func hashAll(ctx context.Context, h hash.Hash, r io.Reader, progress func(int64)) (int64, error) {
	buf := make([]byte, bufSize)
	var n, last int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, err := r.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
			if progress != nil && n-last >= progressEvery {
				last = n
				progress(n)
			}
		}
		if err == io.EOF {
			if progress != nil {
				progress(n)
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
