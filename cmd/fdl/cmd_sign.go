package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fdl-dev/fdl/internal/term"
	"github.com/fdl-dev/fdl/repo"
)

// signingKeyEnv names the signing key when --sign-key is not given.
const signingKeyEnv = "FDL_SIGNING_KEY"

// signKey returns the signing key --sign-key names, else $FDL_SIGNING_KEY
// ("" for none): a path is taken relative to -C DIR; a literal public key
// (key::…, ssh-…) and ~/… are passed on as they are.
func (g *globals) signKey(flag string) string {
	k := flag
	if k == "" {
		k = os.Getenv(signingKeyEnv)
	}
	if k == "" || strings.HasPrefix(k, "key::") || strings.HasPrefix(k, "ssh-") || strings.HasPrefix(k, "~/") {
		return k
	}
	return g.path(k)
}

// addSignKeyFlag registers --sign-key on cmd, bound to v.
func addSignKeyFlag(cmd *cobra.Command, v *string, what string) {
	cmd.Flags().StringVar(v, "sign-key", "", what+" with this SSH key: a private key `FILE`, a public key file whose key ssh-agent holds, or key::PUBLIC-KEY (default: $"+signingKeyEnv+")")
}

type signOptions struct {
	Key string
}

func newSignCmd(ios *term.IO, g *globals) *cobra.Command {
	o := &signOptions{}
	cmd := &cobra.Command{
		Use:   "sign REV|TAG",
		Short: "Sign a published version or tag with an SSH key",
		Long: `Sign what REV names in the repository, with an SSH key, in the format Git
uses for SSH-signed commits (ssh-keygen -Y sign, namespace fdl):

  - a tag (its name): the tag's signature, which covers the repository's id,
    the tag's name and the version it names, so that it cannot be replayed
    onto another tag or into another repository; the version's record is
    signed too when it has no signature yet;
  - any other revision: the version's record (its version.json bytes).

Each signature is an object of its own, written once (create-only): a
record never changes. Something already signed is refused (exit 1) and
nothing is written. A version committed with --sign-key (or
$FDL_SIGNING_KEY set) is signed at commit and pushed with its signature.

The key is --sign-key, else $FDL_SIGNING_KEY: a private key file (one
protected by a passphrase is used through ssh-agent), a public key file
whose private key ssh-agent holds (as Git's user.signingKey), or
key::PUBLIC-KEY. Readers check signatures with fdl verify --signers FILE,
fdl show --signers FILE and fdl attach --require-signed --signers FILE.`,
		Example: `  fdl sign 2025-final --sign-key ~/.ssh/id_ed25519
  FDL_SIGNING_KEY=~/.ssh/id_ed25519.pub fdl sign main`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runSign(cmd.Context(), ios, g, a[0], o)
		},
	}
	addSignKeyFlag(cmd, &o.Key, "sign")
	g.addRepoFlag(cmd)
	return cmd
}

func runSign(ctx context.Context, ios *term.IO, g *globals, rev string, o *signOptions) error {
	return g.withRepo(ctx, func(r *repo.Repo, l *repo.Local) error {
		res, err := r.Sign(ctx, rev, repo.SignOptions{Key: g.signKey(o.Key), Local: l})
		if err != nil {
			return err
		}
		if g.JSON {
			return printJSON(ios, res)
		}
		printSigned(ios, res)
		return nil
	})
}

// printSigned says what a sign wrote: one line per signature object.
func printSigned(ios *term.IO, res *repo.SignResult) {
	for _, k := range res.Signed {
		what := "version " + string(res.Version)
		if strings.HasPrefix(k, repo.SignaturesPrefix) {
			what = "tag " + res.Tag
		}
		ios.Printf("Signed %s with key %s: %s\n", what, res.Key, k)
	}
}

// printSignature prints a Signature: line (show, log --show-signature).
func printSignature(ios *term.IO, indent string, c *repo.SignatureCheck) {
	if c == nil {
		return
	}
	switch c.Status {
	case repo.SigGood:
		ios.Printf("%sSignature: %s by %s (key %s)\n", indent, ios.OK("good"), strings.Join(c.Principals, ", "), c.Key)
	case repo.SigUnchecked:
		ios.Printf("%sSignature: by key %s, verifies; who may sign is not checked (give --signers FILE)\n", indent, c.Key)
	case repo.SigUnsigned:
		ios.Printf("%sSignature: none (not signed)\n", indent)
	case repo.SigNotAllowed:
		ios.Printf("%sSignature: %s: by key %s: %s\n", indent, ios.Bad("NOT ALLOWED"), c.Key, c.Reason)
	default:
		ios.Printf("%sSignature: %s: %s\n", indent, ios.Bad("BAD"), c.Reason)
	}
}
