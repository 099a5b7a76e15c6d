package folder

import (
	"encoding/binary"
	"io/fs"
	"os"
	"syscall"
)

// direntBuf is the size of the buffer readEntries reads a folder into: at
// about 60 bytes an entry, a thousand entries a system call.
const direntBuf = 64 << 10

// direntName is where the name begins in a struct linux_dirent64 (ino
// u64, off s64, reclen u16, type u8, then the name, NUL-terminated).
const direntName = 19

// readEntries calls fn with the name of each entry of the open folder f
// (not "." or "..") and its type, in the order the file system gives
// them, reading the folder a buffer at a time with getdents64. name is
// the buffer's bytes, valid only until fn returns: unlike os.File.ReadDir
// this makes no DirEntry and no string, so listing a folder of a million
// data files costs the system calls, not a million allocations. typ is
// fs.ModeIrregular when the file system does not say (DT_UNKNOWN): the
// caller stats such an entry. fn's error stops the reading and is
// returned; so are the system call's, as *os.PathError.
func readEntries(f *os.File, fn func(name []byte, typ fs.FileMode) error) error {
	buf := make([]byte, direntBuf)
	fd := int(f.Fd())
	for {
		n, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "getdents", Path: f.Name(), Err: err}
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off < n; {
			if off+direntName > n {
				return &os.PathError{Op: "getdents", Path: f.Name(), Err: syscall.EIO}
			}
			ino := binary.NativeEndian.Uint64(buf[off:])
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			typ := buf[off+18]
			if reclen <= direntName || off+reclen > n {
				return &os.PathError{Op: "getdents", Path: f.Name(), Err: syscall.EIO}
			}
			end := off + direntName
			for end < off+reclen && buf[end] != 0 {
				end++
			}
			name := buf[off+direntName : end]
			off += reclen
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			if err := fn(name, direntType(typ)); err != nil {
				return err
			}
		}
	}
}

// direntType maps a d_type to the type bits of fs.FileMode, as os does.
func direntType(t uint8) fs.FileMode {
	switch t {
	case syscall.DT_REG:
		return 0
	case syscall.DT_DIR:
		return fs.ModeDir
	case syscall.DT_LNK:
		return fs.ModeSymlink
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe
	case syscall.DT_SOCK:
		return fs.ModeSocket
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.DT_BLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
