package ducklake

import "github.com/fdl-dev/fdl/internal/ducklake/meta"

// ReaderNote returns what a reader must know before running an ATTACH line
// for a catalog of DuckLake format f: "" for the current format (1.0) and
// for formats fdl does not know; else a SQL block comment naming the DuckDB
// releases whose ducklake extension attaches it as is (meta.LookupFormat;
// every other release refuses it, and a READ_ONLY reader cannot migrate
// it), e.g. "/* DuckLake 0.4: read as is by DuckDB 1.5.0 - 1.5.1 only */".
// It is appended to the printed line, so the line still runs as printed
// and the note travels with it when copied.
func ReaderNote(f string) string {
	if f == CurrentFormat {
		return ""
	}
	m, ok := meta.LookupFormat(f)
	if !ok {
		return ""
	}
	if m.Extension == nil {
		return "/* DuckLake " + f + ": no published DuckDB release reads it as is */"
	}
	return "/* DuckLake " + f + ": read as is by DuckDB " + m.Extension.String() + " only */"
}
