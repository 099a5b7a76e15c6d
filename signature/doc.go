// Package signature signs and checks fdl's objects with SSH keys, in the
// SSH signature format Git uses for commits and tags (SSHSIG, OpenSSH's
// PROTOCOL.sshsig, as ssh-keygen -Y sign writes it), so that a reader can
// tell offline who published a version or a tag (docs/spec.md §20).
//
// Signing: LoadSigner reads the key Git's user.signingKey would name (a
// private key file, or a public key whose private half ssh-agent holds)
// and Signer.Sign returns an armored signature ("-----BEGIN SSH
// SIGNATURE-----") over a message, for a namespace (Namespace, "fdl", for
// fdl's objects), hashed with sha512. The encoding is done by
// github.com/hiddeco/sshsig over golang.org/x/crypto/ssh; ssh-keygen -Y
// verify accepts what Sign writes, and ParseSignature reads what
// ssh-keygen -Y sign writes.
//
// Checking: ParseSignature and Signature.Verify say whether a signature is
// one by its key over a message; AllowedSigners (an allowed signers file
// in OpenSSH's format, Git's gpg.ssh.allowedSignersFile) says whether that
// key is trusted, for which principals, in which namespaces and when:
// AllowedSigners.Check. Certificates issued by a cert-authority line are
// checked as OpenSSH checks them.
//
// What is signed: a version's record is signed as its exact version.json
// bytes; a tag as a TagPayload, which binds the repository id, the tag
// name and the version id so that its signature cannot be replayed onto
// another tag or into another repository.
//
// The package does no I/O but reading the key file and talking to
// ssh-agent; where objects live and when they are written is the
// caller's. Errors are typed (errors.go) and never name an fdl command.
package signature
