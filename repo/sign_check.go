package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/signature"
	"github.com/fdl-dev/fdl/version"
)

// Checking signatures (docs/spec.md §20): who signed a version or a tag,
// judged by a reader's allowed signers file.

// SignatureStatus is what a check of one signature found.
type SignatureStatus string

// The statuses of a signature, from best to worst.
const (
	// SigGood: the signature verifies and the allowed signers file allows
	// its key for namespace fdl at the time checked.
	SigGood SignatureStatus = "good"
	// SigUnchecked: the signature verifies, and no allowed signers file
	// was given to say whether its key may sign.
	SigUnchecked SignatureStatus = "unchecked"
	// SigNotAllowed: the signature verifies, and the allowed signers file
	// does not allow its key (not listed, another namespace, outside its
	// validity, a certificate not accepted).
	SigNotAllowed SignatureStatus = "not-allowed"
	// SigBad: the signature object does not verify over what it signs (a
	// record or a tag changed after it was signed, a damaged or foreign
	// signature, one made for another namespace).
	SigBad SignatureStatus = "bad"
	// SigUnsigned: there is no signature object.
	SigUnsigned SignatureStatus = "unsigned"
)

// SignatureCheck is the finding of one signature check. Its JSON is the
// "signature" of fdl show, fdl log --show-signature and fdl attach.
type SignatureCheck struct {
	// Object is the signature's store key (SignatureKey).
	Object string          `json:"object"`
	Status SignatureStatus `json:"status"`
	// Principals are who signed, by the allowed signers file (SigGood).
	Principals []string `json:"principals,omitempty"`
	// Key is the signing key's fingerprint ("SHA256:…"), when the object
	// parses.
	Key string `json:"fingerprint,omitempty"`
	// Reason says why the signature is not good (Err's text).
	Reason string `json:"reason,omitempty"`
	// Err is the signature package's error (its type says what is wrong).
	Err error `json:"-"`
}

// Good reports whether the signature verifies and an allowed signer made
// it.
func (c SignatureCheck) Good() bool { return c.Status == SigGood }

// judge checks armored signature sig over message, namespace fdl, by
// signers at time at (nil signers: only that it verifies).
func judge(sig, message []byte, signers *signature.AllowedSigners, at time.Time) SignatureCheck {
	var c SignatureCheck
	fail := func(st SignatureStatus, err error) SignatureCheck {
		c.Status, c.Err, c.Reason = st, err, err.Error()
		return c
	}
	s, err := signature.ParseSignature(sig)
	if err != nil {
		return fail(SigBad, err)
	}
	c.Key = s.Fingerprint()
	if signers == nil {
		if err := s.Verify(message, signature.Namespace); err != nil {
			return fail(SigBad, err)
		}
		c.Status = SigUnchecked
		return c
	}
	names, err := signers.Check(s, message, signature.Namespace, at)
	switch {
	case errors.Is(err, signature.ErrNotAllowed):
		return fail(SigNotAllowed, err)
	case err != nil:
		return fail(SigBad, err)
	}
	c.Status, c.Principals = SigGood, names
	return c
}

// LoadSigners reads and parses an allowed signers file (OpenSSH's format,
// Git's gpg.ssh.allowedSignersFile; docs/spec.md §20). "" gives nil: no
// file, signatures are only checked to verify. Errors: the file's
// (naming it), *signature.SignersFileError.
func LoadSigners(path string) (*signature.AllowedSigners, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &SignersReadError{File: path, Err: err}
	}
	return signature.ParseAllowedSigners(path, b)
}

// VersionSignature checks the signature of version id's record (its
// exact version.json bytes) by signers (nil: only that it verifies), at
// the record's created_at (as Git checks a commit at its time). A version
// committed in the working directory l and not pushed is read from there.
// A missing signature is SigUnsigned, not an error. Errors: the store's,
// the Record errors when the record is not there.
func (r *Repo) VersionSignature(ctx context.Context, l *Local, id version.ID, signers *signature.AllowedSigners) (SignatureCheck, error) {
	c, _, err := r.versionSignature(ctx, l, id, signers)
	return c, err
}

// versionSignature is VersionSignature, with the record parsed from the
// bytes checked (nil when unsigned or when they do not parse).
func (r *Repo) versionSignature(ctx context.Context, l *Local, id version.ID, signers *signature.AllowedSigners) (SignatureCheck, *version.Record, error) {
	key := SignatureKey(id, "")
	var rec, sig []byte
	var err error
	if p := l.pending(id); p != nil {
		key = filepath.Join(p.Dir, version.SignatureFile)
		if rec, err = os.ReadFile(filepath.Join(p.Dir, version.RecordFile)); err != nil {
			return SignatureCheck{}, nil, err
		}
		sig, err = os.ReadFile(key)
		if errors.Is(err, os.ErrNotExist) {
			return SignatureCheck{Object: key, Status: SigUnsigned}, nil, nil
		}
	} else {
		sig, _, err = store.ReadAll(ctx, r.st, key)
		if errors.Is(err, store.ErrNotExist) {
			return SignatureCheck{Object: key, Status: SigUnsigned}, nil, nil
		}
		if err == nil {
			rec, _, err = store.ReadAll(ctx, r.st, VersionKey(id, version.RecordFile))
		}
	}
	if err != nil {
		return SignatureCheck{}, nil, fmt.Errorf("version %s: signature: %w", id, err)
	}
	c, parsed := judgeRecord(id, key, sig, rec, signers)
	return c, parsed, nil
}

// judgeRecord checks sig over a record's bytes, at the time the record
// says it was made (now, when it does not parse: the signature still
// says whether those bytes are the signed ones), and returns the record
// parsed from them.
func judgeRecord(id version.ID, key string, sig, rec []byte, signers *signature.AllowedSigners) (SignatureCheck, *version.Record) {
	at := time.Now()
	parsed, err := version.ParseRecord(rec, id)
	if err == nil {
		at = parsed.CreatedAt
	}
	c := judge(sig, rec, signers, at)
	c.Object = key
	return c, parsed
}

// TagSignature checks the signature of tag (its short name) naming
// version id: over the tag payload built from the repository id, the
// tag's name and id (signature.TagPayload), by signers (nil: only that
// it verifies), at the present time (a tag carries no time of its own,
// so it is checked as ssh-keygen -Y verify checks: now). A repository
// without an id has no tag signature that can verify (SigBad). A missing
// signature is SigUnsigned. Errors: the store's.
func (r *Repo) TagSignature(ctx context.Context, tag string, id version.ID, signers *signature.AllowedSigners) (SignatureCheck, error) {
	key := SignatureKey(id, tag)
	sig, _, err := store.ReadAll(ctx, r.st, key)
	if errors.Is(err, store.ErrNotExist) {
		return SignatureCheck{Object: key, Status: SigUnsigned}, nil
	}
	if err != nil {
		return SignatureCheck{}, fmt.Errorf("tag %s: signature: %w", tag, err)
	}
	return r.judgeTag(key, tag, id, sig, signers), nil
}

// judgeTag checks sig over the payload of tag naming id in this
// repository.
func (r *Repo) judgeTag(key, tag string, id version.ID, sig []byte, signers *signature.AllowedSigners) SignatureCheck {
	payload, err := signature.TagPayload{Repository: r.cfg.ID, Tag: tag, Version: string(id)}.Marshal()
	if err != nil {
		c := SignatureCheck{Object: key, Status: SigBad, Err: err}
		if r.cfg.ID == "" {
			c.Err = fmt.Errorf("the repository has no id (fdl.json \"id\"), so no tag signature of it can verify: %w", err)
		}
		c.Reason = c.Err.Error()
		return c
	}
	c := judge(sig, payload, signers, time.Now())
	c.Object = key
	return c
}

// tagName returns the short name of a tag ref, "" for another ref.
func tagName(n refs.Name) string {
	if n.Kind() != refs.KindTag {
		return ""
	}
	return n.Short()
}
