// Package sqlquote quotes names and strings for the SQL fdl writes and
// prints: DuckDB's rules, which SQLite shares for both (double quotes
// around an identifier, single quotes around a string, the quote doubled
// inside). It is the one copy of those rules in fdl.
package sqlquote

import "strings"

// Ident quotes s as an identifier, always: "my ""t""" (also the way
// DuckLake writes names in changes_made: DuckLakeUtil::SQLIdentifierToString).
func Ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// IdentIfNeeded returns s as it is when it is a plain identifier (lower-case
// letters, digits and '_', not starting with a digit, not one of DuckDB's
// keywords that are not unreserved: select, from, ...), else Ident(s): the
// form a person types.
func IdentIfNeeded(s string) string {
	plain := s != "" && !keywords[s]
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
		}
	}
	if plain {
		return s
	}
	return Ident(s)
}

// String quotes s as a string literal, a single quote inside doubled.
func String(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
