package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/fdl-dev/fdl/internal/term"
)

// Printing helpers shared by the commands.

// printJSON prints v as indented JSON; "<", ">" and "&" stay as they are
// (readers: ">= 1.5.0").
func printJSON(ios *term.IO, v any) error {
	enc := json.NewEncoder(ios.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// warn prints each warning a command's result carries on stderr, with its
// hint (message).
func warn(ios *term.IO, warnings []error) {
	for _, w := range warnings {
		ios.Warnf("%s", message(w))
	}
}

// oneLine returns the first line of s, with " …" when more follows, and
// control characters escaped (a tab would break tab-separated output; an
// escape sequence would drive the terminal).
func oneLine(s string) string {
	for i, c := range s {
		if c == '\n' || c == '\r' {
			return printable(s[:i]) + " …"
		}
	}
	return printable(s)
}

// printable escapes control characters other than newline as Go escapes
// (\t, \x1b).
func printable(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if isControl(c) {
			q := strconv.QuoteRune(c)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func isControl(c rune) bool { return c != '\n' && unicode.IsControl(c) }

func ms(n int64) string { return fmt.Sprint(time.Duration(n) * time.Millisecond) }
