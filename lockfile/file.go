package lockfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/internal/store"
)

// MaxFileSize is the largest lockfile Load reads, in bytes (a pin takes
// about 300).
const MaxFileSize = 16 << 20

// Find returns the path of the nearest lockfile: startDir/fdl.lock if it
// exists, else the one in startDir's parent, and so on up to the file
// system's root (as Cargo finds Cargo.toml). startDir is made absolute
// first, so the path returned is absolute. A folder named fdl.lock is not
// a lockfile, and a folder this user may not look into cannot hold one:
// both are passed over. A symbolic link named fdl.lock whose file is not
// made yet is that folder's lockfile (the first save makes the file).
// Errors: ErrNotFound wrapped with startDir when no
// folder up to the root holds one; any other error of looking (a symbolic
// link loop), naming the path.
func Find(startDir string) (string, error) {
	dir, err := filepath.Abs(startDir)
	if err != nil {
		return "", fmt.Errorf("find %s from %s: %w", FileName, startDir, err)
	}
	for {
		p := filepath.Join(dir, FileName)
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, nil
		case errors.Is(err, fs.ErrNotExist) && isLink(p):
			return p, nil // a link to a lockfile not made yet: this folder's
		case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission):
			return "", fmt.Errorf("find %s: %w", FileName, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s in %s or any folder above it: %w", FileName, startDir, ErrNotFound)
		}
		dir = parent
	}
}

// Load reads and checks the lockfile at path (see Parse). Errors: the
// error of opening it (errors.Is(err, fs.ErrNotExist) when it is missing);
// *InvalidError for a folder or a file over MaxFileSize; Parse's errors,
// naming path.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.IsDir() {
		return nil, &InvalidError{File: path, Reason: fmt.Sprintf("a folder, not a lockfile: give the file's path (%s)", filepath.Join(path, FileName))}
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, err // the *PathError names path
	}
	if len(data) > MaxFileSize {
		return nil, &InvalidError{File: path, Reason: fmt.Sprintf("larger than %d bytes: not a lockfile", MaxFileSize)}
	}
	return Parse(data, path)
}

// Save writes f to path atomically: its bytes (Marshal) go to a new
// temporary file in path's folder (".fdl.lock.*.tmp"), which is fsynced,
// given the mode of the file it replaces (0644 for a new one) and renamed
// over path (over the file it links to, when path is a symbolic link);
// the folder is then fsynced. A write that fails or is killed
// leaves the old file as it was (a killed one may leave its temporary
// file). Errors: the file system's, naming path; the temporary file is
// removed on any error.
func (f *File) Save(path string) error {
	data, err := f.Marshal()
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return writeAtomic(path, data, func(w io.Writer, b []byte) error {
		_, err := w.Write(b)
		return err
	})
}

// writeAtomic is Save's write, with the function that writes the bytes
// into the temporary file given (tests make it fail halfway).
func writeAtomic(path string, data []byte, write func(io.Writer, []byte) error) (err error) {
	// A lockfile kept as a symbolic link (to a file shared by several
	// projects, say) stays one: the file it points to is replaced, or made
	// when the link is dangling.
	path = linkTarget(path)
	dir := filepath.Dir(path)
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("write %s: not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+FileName+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err := write(tmp, data); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir fsyncs a folder so a rename in it survives a crash; where a
// folder cannot be opened or synced (Windows) the rename still stands.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// isURL reports whether a repository string is a store URL (or reads as a
// mistyped one, which store.Open then refuses clearly) rather than a
// folder path.
func isURL(repo string) bool { return store.LooksLikeURL(repo) }

// RepositoryURL returns the location to open pin's repository at: a URL
// as the file holds it; an absolute folder path as it is (in the
// platform's separators); a relative folder path joined to lockDir, the
// folder that holds the lockfile (absolute, as Find returns it), so the
// project can move as a whole.
func RepositoryURL(lockDir string, p Pin) string {
	if isURL(p.Repository) {
		return p.Repository
	}
	local := filepath.FromSlash(p.Repository)
	if filepath.IsAbs(local) {
		return filepath.Clean(local)
	}
	return filepath.Join(lockDir, local)
}

// StoredRepository returns what a pin's repository field holds for
// location, the inverse of RepositoryURL: a URL unchanged; a folder path
// (absolute, or relative to the process's working directory) made relative
// to lockDir, with "/" separators, when the folder lies inside lockDir
// ("./data/sales", "." for lockDir itself) or inside lockDir's parent
// ("../sales"): such a repository travels with the project, in one
// checkout. Any other folder keeps its absolute path, which a second
// machine has to hold too. Errors: the working directory cannot be read.
func StoredRepository(lockDir, location string) (string, error) {
	if isURL(location) {
		return location, nil
	}
	abs, err := filepath.Abs(location)
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", location, err)
	}
	base, err := filepath.Abs(lockDir)
	if err != nil {
		return "", fmt.Errorf("lockfile folder %s: %w", lockDir, err)
	}
	rel, err := filepath.Rel(base, abs)
	if err != nil {
		return abs, nil // another volume
	}
	switch {
	case rel == ".":
		return ".", nil
	case filepath.IsLocal(rel):
		return "./" + filepath.ToSlash(rel), nil
	case strings.HasPrefix(rel, ".."+string(filepath.Separator)) && filepath.IsLocal(rel[3:]):
		return filepath.ToSlash(rel), nil
	}
	return abs, nil
}

// linkTarget returns the file path names once its symbolic links are
// followed, as the system follows them for a write: also when the last
// link names a file that does not exist yet (a dangling link; the write
// makes the file). A path that is no link, or a loop of links (given up
// after 40, the system's own bound), is returned as it is reached.
func linkTarget(path string) string {
	if t, err := filepath.EvalSymlinks(path); err == nil {
		return t
	}
	for range 40 {
		l, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(path), l)
		}
		path = l
	}
	return path
}

// isLink reports whether path is a symbolic link (followed or not).
func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}
