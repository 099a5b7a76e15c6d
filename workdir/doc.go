// Package workdir is a working directory checked out of a repository:
// DIR/.fdl/ (state.json, base.json, the versions committed there and not
// pushed yet, the lock) beside the working catalog DuckDB writes to
// (docs/spec.md §12). It is the library the working-directory commands
// call, one method per command, each returning a result value: Checkout,
// Workdir.Status, Workdir.Commit, Workdir.Push, Workdir.PublishRequest,
// Workdir.Pull, Workdir.Revert, Workdir.Restore and Workdir.Migrate.
//
// A Workdir holds its repository (package repo), opened once on first use
// with the options given to Open; the repository never holds a working
// directory. What a repository command needs from one — its branch,
// upstream, base and unpushed versions — is the input value Local
// returns (repo.Local). Files are named after their one job: checkout.go,
// commit.go (with commit_published.go and superseded.go, the checks that
// a commit rewrites no published history and deletes no published file),
// status.go, push.go, pull.go, undo.go (revert and restore), migrate.go,
// workdir.go (the state, the lock) and errors.go.
//
// The package never prints and never imports cobra or lipgloss.
package workdir
