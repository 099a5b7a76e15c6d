package repo

import (
	"context"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/signature"
	"github.com/fdl-dev/fdl/version"
)

// verifySignatures checks every signature object of the versions ids
// (those vs found signed) and of the tags among heads (one listing of
// signatures/tags/), by signers when given (nil: only that each
// verifies): one that does not verify is CodeSignatureBad, one whose key
// signers does not allow CodeSignerNotAllowed; with signers, a complete
// version or a tag without a signature is noted (CodeVersionUnsigned,
// CodeTagUnsigned). Errors: the store's.
func (r *Repo) verifySignatures(ctx context.Context, signers *signature.AllowedSigners, vs *verifyState, rep *VerifyReport, ids []version.ID, heads []refs.Ref, add func(code Code, obj, format string, a ...any)) error {
	judged := func(obj, what string, c SignatureCheck) {
		switch c.Status {
		case SigBad:
			add(CodeSignatureBad, obj, "%s: its signature %s does not verify: %v", what, c.Object, c.Err)
		case SigNotAllowed:
			add(CodeSignerNotAllowed, obj, "%s: its signature %s is not by an allowed signer: %v", what, c.Object, c.Err)
		case SigUnsigned:
			if signers != nil {
				code := CodeVersionUnsigned
				if strings.HasPrefix(obj, refs.TagsPrefix) {
					code = CodeTagUnsigned
				}
				rep.Notes = append(rep.Notes, problem(code, obj, "%s is not signed (no %s)", what, c.Object))
			}
			return
		}
		rep.Signatures++
	}
	// Each signed version's record and signature are read, 8 at once
	// (two reads each: on an object store, reading them one after the
	// other would cost a round trip per object).
	checks := make([]*SignatureCheck, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, id := range ids {
		if _, err := r.Record(ctx, id); err != nil {
			continue // incomplete or invalid: reported as such
		}
		checks[i] = &SignatureCheck{Object: SignatureKey(id, ""), Status: SigUnsigned}
		if vs.signed[id] {
			g.Go(func() error {
				c, err := r.VersionSignature(gctx, nil, id, signers)
				*checks[i] = c
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, id := range ids {
		if checks[i] != nil {
			judged(string(id), "version "+string(id), *checks[i])
		}
	}
	sigs := map[string]bool{}
	if err := r.st.List(ctx, tagSignaturesPrefix, func(oi store.ObjectInfo) error {
		sigs[oi.Key] = true
		return nil
	}); err != nil {
		return err
	}
	for _, ref := range heads {
		tag := tagName(ref.Name)
		if tag == "" {
			continue
		}
		c := SignatureCheck{Object: SignatureKey(ref.ID, tag), Status: SigUnsigned}
		if sigs[c.Object] {
			var err error
			if c, err = r.TagSignature(ctx, tag, ref.ID, signers); err != nil {
				return err
			}
		}
		judged(string(ref.Name), "tag "+tag+" (version "+string(ref.ID)+")", c)
	}
	return nil
}
