//go:build !unix

package folder

// syncDir does nothing: Windows cannot fsync a folder (NTFS journals its
// metadata), and other platforms are not known to need it.
func syncDir(string) error { return nil }
