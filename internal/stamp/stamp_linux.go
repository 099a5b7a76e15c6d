//go:build linux

package stamp

import (
	"os"
	"syscall"
)

// catalogStamp is what the file system says about a local version's
// catalog when commit has hashed it and made it read-only: device, inode,
// size and the modification and change times in nanoseconds. Any write,
// truncation, chmod or rename over the file changes one of them (the
// change time cannot be set by a user), so a push that finds the same
// stamp knows the bytes are the ones hashed and links the file without
// reading it again — the rule Git's index uses to skip rehashing.
type catalogStamp struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ctime int64  `json:"ctime_ns"`
}

// stampOf returns fi's stamp; false where the platform gives none.
func stampOf(fi os.FileInfo) (catalogStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return catalogStamp{}, false
	}
	return catalogStamp{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
}
