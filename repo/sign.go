package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/internal/atomicfile"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/signature"
	"github.com/fdl-dev/fdl/version"
)

// Signatures of records and tags (docs/spec.md §20): where they lie, the
// repository id tag signatures cover, and signing a local record.

// SignaturesPrefix is the store key prefix of tag signatures; a version's
// signature lies in its folder (SignatureKey).
const SignaturesPrefix = "signatures/"

// tagSignaturesPrefix holds signatures/tags/<tag>/<id>.sig.
const tagSignaturesPrefix = SignaturesPrefix + "tags/"

// SignatureKey returns the store key of a signature object, the one place
// such keys are made (push, fdl sign, verify and mirrors all derive them
// here): with tag "", the signature of version id's record,
// versions/<id>/version.json.sig; else the signature of the tag whose
// short name is tag (without refs/tags/) naming version id,
// signatures/tags/<tag>/<id>.sig. Both are create-only objects.
func SignatureKey(id version.ID, tag string) string {
	if tag == "" {
		return VersionKey(id, version.SignatureFile)
	}
	return tagSignaturesPrefix + tag + "/" + string(id) + ".sig"
}

// SignLocalRecord signs the version.json in folder dir (a version
// committed here, not yet pushed) with s, namespace signature.Namespace,
// and writes the armored signature beside it as version.json.sig (temp +
// fsync + rename). Errors: the file's, the signer's
// (*signature.SigningKeyError).
func SignLocalRecord(ctx context.Context, s *signature.Signer, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, version.RecordFile))
	if err != nil {
		return err
	}
	sig, err := s.Sign(ctx, b, signature.Namespace)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, version.SignatureFile), sig)
}

// LoadSigner loads the signing key spec names (a private key file, a
// public key file whose private half ssh-agent holds, or key::<public
// key>: signature.LoadSigner). Errors: *signature.SigningKeyError.
func LoadSigner(ctx context.Context, spec string) (*signature.Signer, error) {
	return signature.LoadSigner(ctx, spec)
}

// checkLocalSignature refuses (*SignatureError) a pending version whose
// version.json.sig does not verify over its version.json: nothing damaged
// leaves this machine. It returns the signature's bytes as checked (the
// ones to upload), nil when the version is unsigned.
func checkLocalSignature(p Pending) ([]byte, error) {
	sig, err := os.ReadFile(filepath.Join(p.Dir, version.SignatureFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := p.recordBytes()
	if err != nil {
		return nil, err
	}
	c := judge(sig, rec, nil, p.Record.CreatedAt)
	if c.Status == SigBad {
		return nil, &SignatureError{Version: p.Record.ID, Check: c, Local: filepath.Join(p.Dir, version.SignatureFile)}
	}
	return sig, nil
}

// RepositoryID returns the repository's id (fdl.json "id", docs/spec.md
// §2), which tag signatures cover. A repository made before ids has none:
// the first call gives it one, a new UUID written into fdl.json by one
// compare-and-swap (the only change fdl.json ever sees; another process
// that gave it one first wins, and its id is returned). Errors: the
// store's (store.ErrReadOnly on a web server), fdl.json's.
func (r *Repo) RepositoryID(ctx context.Context) (string, error) {
	if r.cfg.ID != "" {
		return r.cfg.ID, nil
	}
	for range 5 {
		b, tok, err := store.ReadAll(ctx, r.st, ConfigKey)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", ConfigKey, err)
		}
		var cfg Config
		if err := json.Unmarshal(b, &cfg); err != nil {
			return "", fmt.Errorf("%s: %s does not parse (%v): %w", r.where, ConfigKey, err, ErrNotRepository)
		}
		if cfg.ID != "" {
			r.cfg.ID = cfg.ID
			return cfg.ID, nil
		}
		id, err := version.NewID()
		if err != nil {
			return "", err
		}
		nb, err := withConfigID(b, string(id))
		if err != nil {
			return "", fmt.Errorf("%s: %s: %w", r.where, ConfigKey, err)
		}
		_, err = r.st.Swap(ctx, ConfigKey, tok, nb)
		if errors.Is(err, store.ErrConflict) {
			continue // another process changed it: read it again
		}
		if err != nil {
			return "", fmt.Errorf("give %s a repository id: write %s: %w", r.where, ConfigKey, err)
		}
		r.cfg.ID = string(id)
		return r.cfg.ID, nil
	}
	return "", fmt.Errorf("give %s a repository id: %s kept changing while it was written: %w; run the command again", r.where, ConfigKey, store.ErrConflict)
}

// withConfigID returns fdl.json's bytes b with "id": id added as its last
// member, every other byte as it was (fields this fdl does not know
// included).
func withConfigID(b []byte, id string) ([]byte, error) {
	t := bytes.TrimRight(b, " \t\r\n")
	if len(t) == 0 || t[len(t)-1] != '}' {
		return nil, errors.New("not a JSON object")
	}
	body := bytes.TrimRight(t[:len(t)-1], " \t\r\n")
	q, _ := json.Marshal(id)
	var out []byte
	out = append(out, body...)
	if !bytes.HasSuffix(body, []byte("{")) {
		out = append(out, ',')
	}
	out = append(out, "\n  \"id\": "...)
	out = append(out, q...)
	out = append(out, "\n}\n"...)
	var check Config
	if err := json.Unmarshal(out, &check); err != nil || check.ID != id {
		return nil, fmt.Errorf("cannot add an id to it (%v)", err)
	}
	return out, nil
}

// tagShort returns the short name of the tag rev names, when rev is a
// tag's name (NAME, tags/NAME or refs/tags/NAME) and the tag exists.
func (r *Repo) tagShort(ctx context.Context, rev string) (refs.Name, refs.Ref, bool) {
	short, ok := strings.CutPrefix(rev, "refs/tags/")
	if !ok {
		short = strings.TrimPrefix(rev, "tags/")
	}
	n, err := refs.Tag(short)
	if err != nil {
		return "", refs.Ref{}, false
	}
	ref, err := r.refs.Read(ctx, n)
	if err != nil {
		return "", refs.Ref{}, false
	}
	return n, ref, true
}
