package store

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// TempPrefix starts the name of every temporary object a store writes for
// itself (the folder store's temporary files, an object store's probe);
// LockSuffix ends the name of every lock file (the folder store's). Neither
// is a valid key element, so no key can collide with them and List can hide
// them by name.
const (
	TempPrefix = ".tmp-"
	LockSuffix = ".lock"
)

// TempName returns a fresh name for a temporary object: TempPrefix, then
// kind ("" or e.g. "probe-"), then 24 random hex digits. It is never a
// valid key element.
func TempName(kind string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return TempPrefix + kind + hex.EncodeToString(b[:])
}

// CheckKey returns nil if key is a valid key (see the package doc), or an
// error wrapping ErrInvalidKey that quotes the key and says what is wrong.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%q: %w: empty", key, ErrInvalidKey)
	}
	if err := checkChars(key); err != nil {
		return err
	}
	if strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("%q: %w: leading or trailing slash", key, ErrInvalidKey)
	}
	for _, elem := range strings.Split(key, "/") {
		if err := checkElem(key, elem); err != nil {
			return err
		}
	}
	return nil
}

// CheckPrefix checks a List prefix: "" (everything), or a key prefix that
// may stop anywhere, also right after a slash ("refs/") or in the middle of
// an element ("versions/01"). Every element before the last slash must be a
// valid key element.
// Errors wrap ErrInvalidKey and quote the prefix.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := checkChars(prefix); err != nil {
		return err
	}
	if strings.HasPrefix(prefix, "/") {
		return fmt.Errorf("%q: %w: leading slash", prefix, ErrInvalidKey)
	}
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return nil
	}
	for _, elem := range strings.Split(prefix[:i], "/") {
		if err := checkElem(prefix, elem); err != nil {
			return err
		}
	}
	return nil
}

// CheckElement returns nil if elem is a valid element of a key (a file or
// folder name: no slash, not "." or "..", no lock suffix or temporary
// prefix, no control character or backslash), or an error wrapping
// ErrInvalidKey.
func CheckElement(elem string) error {
	if strings.Contains(elem, "/") {
		return fmt.Errorf("%q: %w: contains a slash", elem, ErrInvalidKey)
	}
	if err := checkElem(elem, elem); err != nil {
		return err
	}
	return checkChars(elem)
}

func checkChars(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%.40q…: %w: longer than %d bytes", key, ErrInvalidKey, MaxKeyLen)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%q: %w: not valid UTF-8", key, ErrInvalidKey)
	}
	for _, r := range key {
		switch {
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("%q: %w: control character", key, ErrInvalidKey)
		case r == '\\':
			return fmt.Errorf("%q: %w: backslash", key, ErrInvalidKey)
		}
	}
	return nil
}

func checkElem(key, elem string) error {
	switch {
	case elem == "":
		return fmt.Errorf("%q: %w: empty element", key, ErrInvalidKey)
	case elem == "." || elem == "..":
		return fmt.Errorf("%q: %w: %q element", key, ErrInvalidKey, elem)
	case strings.HasSuffix(elem, LockSuffix):
		return fmt.Errorf("%q: %w: element ends in %q", key, ErrInvalidKey, LockSuffix)
	case strings.HasPrefix(elem, TempPrefix):
		return fmt.Errorf("%q: %w: element starts with %q", key, ErrInvalidKey, TempPrefix)
	}
	return nil
}
