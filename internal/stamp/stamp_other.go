//go:build !linux

package stamp

import "os"

// catalogStamp is empty where fdl does not trust the file system's change
// time: a push then always hashes the catalog it links.
type catalogStamp struct{}

// stampOf returns false: no stamp on this platform.
func stampOf(os.FileInfo) (catalogStamp, bool) { return catalogStamp{}, false }
