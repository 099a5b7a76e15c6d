package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/signature"
	"github.com/fdl-dev/fdl/version"
)

// Signing what is published: fdl sign REV and fdl tag --sign.

// SignOptions are the inputs of Sign and CreateSignedTag.
type SignOptions struct {
	// Key names the signing key (LoadSigner): a private key file, a
	// public key file whose private half ssh-agent holds, or
	// key::<public key>.
	Key string
	// Signer, if set, is used instead of loading Key (tests, or a caller
	// that loaded it once).
	Signer *signature.Signer
	// Local is the working directory the command runs in (nil: none): a
	// revision naming one of its versions not pushed says so (Sign signs
	// published versions only).
	Local *Local
}

// SignResult says what Sign or CreateSignedTag signed. Its JSON is 'fdl
// sign --json' (and "signed" of 'fdl tag --sign --json').
type SignResult struct {
	Version version.ID `json:"version"`
	Seq     int64      `json:"seq"`
	// Tag is the tag's short name when a tag was signed.
	Tag string `json:"tag,omitempty"`
	// Signed are the keys of the signature objects written, [] for none.
	Signed []string `json:"written"`
	// Key is the signing key's fingerprint ("SHA256:…").
	Key string `json:"fingerprint"`
	// Repository is the repository id a tag signature covers.
	Repository string `json:"repository_id,omitempty"`
}

// signer returns o's signer, loading o.Key once.
func (o *SignOptions) signer(ctx context.Context) (*signature.Signer, error) {
	if o.Signer == nil {
		s, err := LoadSigner(ctx, o.Key)
		if err != nil {
			return nil, err
		}
		o.Signer = s
	}
	return o.Signer, nil
}

// Sign signs what rev names, published: a tag (NAME, tags/NAME or
// refs/tags/NAME of an existing tag) gets its tag signature, and the
// version it names its record's signature too when it has none; any
// other revision names a version, whose record is signed. Each signature
// is a create-only object (SignatureKey): a record is never rewritten.
// Errors: *SignatureExistsError when the tag (for a tag) or the version
// (otherwise) already has one (nothing is written); the signer's
// (*signature.SigningKeyError); the Resolve errors; the store's.
func (r *Repo) Sign(ctx context.Context, rev string, o SignOptions) (*SignResult, error) {
	var rec *version.Record
	tag := ""
	if n, ref, ok := r.tagShort(ctx, rev); ok {
		var err error
		if rec, err = r.Record(ctx, ref.ID); err != nil {
			return nil, refs.DanglingRead(n, ref.ID, err)
		}
		tag = n.Short()
	} else {
		var err error
		if rec, _, err = r.refs.ResolveRecord(ctx, rev); err != nil {
			return nil, o.Local.unknownHere(rev, err)
		}
	}
	// Already signed is said before the key is asked for: a retry needs
	// none.
	key := SignatureKey(rec.ID, tag)
	if _, err := r.st.Stat(ctx, key); err == nil {
		return nil, &SignatureExistsError{Key: key, Version: rec.ID, Tag: tag}
	} else if !errors.Is(err, store.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	s, err := o.signer(ctx)
	if err != nil {
		return nil, err
	}
	res := &SignResult{Version: rec.ID, Seq: rec.Seq, Tag: tag, Signed: []string{}, Key: s.Fingerprint()}
	if tag != "" {
		err = r.signTag(ctx, s, tag, rec, res)
	} else {
		err = r.signRecord(ctx, s, rec, res, false)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// signRecord writes the signature of rec's stored version.json bytes,
// create-only. An existing one is *SignatureExistsError, or, with
// quiet, no error and nothing written.
func (r *Repo) signRecord(ctx context.Context, s *signature.Signer, rec *version.Record, res *SignResult, quiet bool) error {
	key := SignatureKey(rec.ID, "")
	if _, err := r.st.Stat(ctx, key); err == nil {
		if quiet {
			return nil
		}
		return &SignatureExistsError{Key: key, Version: rec.ID}
	} else if !errors.Is(err, store.ErrNotExist) {
		return fmt.Errorf("version %s: %w", rec.ID, err)
	}
	b, _, err := store.ReadAll(ctx, r.st, VersionKey(rec.ID, version.RecordFile))
	if err != nil {
		return fmt.Errorf("version %s: %w", rec.ID, err)
	}
	if _, err := version.ParseRecord(b, rec.ID); err != nil {
		return err // never sign a record that does not parse
	}
	sig, err := s.Sign(ctx, b, signature.Namespace)
	if err != nil {
		return err
	}
	return r.createSignature(ctx, key, sig, rec.ID, "", res, quiet)
}

// createSignature writes sig at key, create-only, and notes it in res.
func (r *Repo) createSignature(ctx context.Context, key string, sig []byte, id version.ID, tag string, res *SignResult, quiet bool) error {
	err := r.st.Create(ctx, key, bytes.NewReader(sig))
	switch {
	case errors.Is(err, store.ErrExist):
		if quiet {
			return nil
		}
		return &SignatureExistsError{Key: key, Version: id, Tag: tag}
	case err != nil:
		return fmt.Errorf("write %s: %w", key, err)
	}
	res.Signed = append(res.Signed, key)
	return nil
}

// signTag signs tag naming rec's version: the record first when it has
// no signature (a tag's signature covers the version id, the record's
// the catalog it describes), then the tag payload, under the
// repository's id (given one if it has none: RepositoryID).
func (r *Repo) signTag(ctx context.Context, s *signature.Signer, tag string, rec *version.Record, res *SignResult) error {
	key := SignatureKey(rec.ID, tag)
	if _, err := r.st.Stat(ctx, key); err == nil {
		return &SignatureExistsError{Key: key, Version: rec.ID, Tag: tag}
	} else if !errors.Is(err, store.ErrNotExist) {
		return fmt.Errorf("tag %s: %w", tag, err)
	}
	if err := r.signRecord(ctx, s, rec, res, true); err != nil {
		return err
	}
	rid, err := r.RepositoryID(ctx)
	if err != nil {
		return err
	}
	res.Repository = rid
	payload, err := signature.TagPayload{Repository: rid, Tag: tag, Version: string(rec.ID)}.Marshal()
	if err != nil {
		return err
	}
	sig, err := s.Sign(ctx, payload, signature.Namespace)
	if err != nil {
		return err
	}
	return r.createSignature(ctx, key, sig, rec.ID, tag, res, false)
}

// CreateSignedTag is CreateTag with a signature: the version's record is
// signed when it has no signature, then the tag's signature object is
// written, then the tag is created (its objects are in before the ref
// appears, as a push's). A tag that already holds the version is no error
// (UpToDate), and is signed if it is not; one that holds another version
// is refused (*refs.ExistsError) before anything is signed. Errors as
// CreateTag and Sign.
func (r *Repo) CreateSignedTag(ctx context.Context, l *Local, name, rev string, o SignOptions) (*NewRef, error) {
	n, err := refs.Tag(name)
	if err != nil {
		return nil, err
	}
	if rev == "" {
		rev = l.DefaultRev()
	}
	rec, _, err := r.refs.ResolveRecord(ctx, rev)
	if err != nil {
		return nil, l.unknownHere(rev, err)
	}
	if cur, err := r.refs.Read(ctx, n); err == nil && cur.ID != rec.ID {
		return r.createRef(ctx, n, rev, rev) // refused: tags never move
	}
	if err := r.RefuseRetired(ctx, rec); err != nil {
		return nil, err
	}
	s, err := o.signer(ctx)
	if err != nil {
		return nil, err
	}
	res := &SignResult{Version: rec.ID, Seq: rec.Seq, Tag: n.Short(), Signed: []string{}, Key: s.Fingerprint()}
	var exists *SignatureExistsError
	if err := r.signTag(ctx, s, n.Short(), rec, res); errors.As(err, &exists) {
		// A retry with the key that signed it is no error; another key's
		// signature is not this signer's: say so.
		if err := r.sameSigner(ctx, exists, s); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	ref, err := r.createRef(ctx, n, rev, string(rec.ID))
	if err != nil {
		return nil, err
	}
	ref.Signed = res
	return ref, nil
}

// sameSigner returns nil when the signature exists names was made by s's
// key, else exists with the other key's fingerprint (By). A signature
// that cannot be read or parsed is not s's either.
func (r *Repo) sameSigner(ctx context.Context, exists *SignatureExistsError, s *signature.Signer) error {
	b, _, err := store.ReadAll(ctx, r.st, exists.Key)
	if err != nil {
		return fmt.Errorf("read %s: %w", exists.Key, err)
	}
	sig, err := signature.ParseSignature(b)
	if err != nil {
		exists.By = "unreadable: " + err.Error()
		return exists
	}
	if fp := sig.Fingerprint(); fp != s.Fingerprint() {
		exists.By = fp
		return exists
	}
	return nil
}
