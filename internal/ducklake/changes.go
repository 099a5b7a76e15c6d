package ducklake

import "strings"

// ParseChanges splits a ducklake_snapshot_changes.changes_made string into its
// items (DuckLake spec: ducklake_snapshot_changes; the extension's
// ParseChangesList): items are separated by commas, each item is
// "kind:value", and a value may hold double-quoted identifiers in which a
// doubled quote ("") stands for one quote and commas and colons are literal,
// e.g. `created_table:"main"."a,""b"`.
//
// Values are returned as stored (quotes kept), e.g. Kind "created_table",
// Value `"main"."a,""b"`. An item without a colon gets an empty Value; empty
// items are skipped; an unterminated quote runs to the end of the string.
// ParseChanges("") returns nil.
func ParseChanges(s string) []Change {
	var out []Change
	i := 0
	for i < len(s) {
		// Scan one item up to a comma outside quotes.
		start := i
		inQuote := false
		for i < len(s) {
			ch := s[i]
			if ch == '"' {
				if inQuote && i+1 < len(s) && s[i+1] == '"' {
					i += 2 // escaped quote inside a quoted identifier
					continue
				}
				inQuote = !inQuote
			} else if ch == ',' && !inQuote {
				break
			}
			i++
		}
		item := s[start:i]
		if i < len(s) {
			i++ // skip the comma
		}
		if strings.TrimSpace(item) == "" {
			continue
		}
		kind, value := item, ""
		if k := strings.IndexByte(item, ':'); k >= 0 {
			kind, value = item[:k], item[k+1:]
		}
		out = append(out, Change{Kind: strings.TrimSpace(kind), Value: value})
	}
	return out
}

// IsCreationSnapshot reports whether s is the snapshot the ducklake
// extension writes itself when it creates a catalog: snapshot 0, whose
// only change is the default schema (created_schema:"main"). It is nobody's
// work; fdl status does not count it as the user's.
func IsCreationSnapshot(s Snapshot) bool {
	return s.ID == 0 && s.Changes == `created_schema:"main"`
}
