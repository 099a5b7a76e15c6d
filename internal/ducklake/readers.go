package ducklake

// Which DuckDB releases attach a catalog as it is. DuckDB's ducklake
// extension reads only the DuckLake format it writes: from DuckDB 1.5.2 on
// (format 1.0) it refuses any other with "DuckLake catalog version
// mismatch … set AUTOMATIC_MIGRATION", and a READ_ONLY reader cannot
// migrate. Sources: duckdb/ducklake src/storage/ducklake_initializer.cpp
// (LoadExistingDuckLake) on the branches each DuckDB release ships
// (v1.3-ossivalis, v1.4-andium, v1.5-variegata); 0.4 checked with DuckDB
// 1.5.1 and its ducklake extension (internal/acceptance), 1.0 with 1.5.5.
var formatReaders = map[string]string{
	"0.1":      "DuckDB 1.3",
	"0.2":      "DuckDB 1.3",
	"0.3-dev1": "DuckDB 1.3",
	"0.3":      "DuckDB 1.4",
	"0.4-dev1": "DuckDB 1.5.0 or 1.5.1",
	"0.4":      "DuckDB 1.5.0 or 1.5.1",
}

// CurrentFormat is the DuckLake format DuckDB 1.5.2 to 1.5.x's ducklake
// extension reads and writes.
const CurrentFormat = "1.0"

// ReaderNote returns what a reader must know before running an ATTACH line
// for a catalog of DuckLake format f: "" when current DuckDB 1.5 reads it
// (1.0) or the format is not one of the older ones listed above, else a
// SQL block comment naming the DuckDB releases that read it, e.g.
// "/* DuckLake 0.4: DuckDB 1.5.0 or 1.5.1 reads it; DuckDB 1.5.2 and later
// read DuckLake 1.0 only */". It is appended to the printed line, so the
// line still runs as printed and the note travels with it when copied.
func ReaderNote(f string) string {
	r, ok := formatReaders[f]
	if !ok {
		return ""
	}
	return "/* DuckLake " + f + ": " + r + " reads it; DuckDB 1.5.2 and later read DuckLake " + CurrentFormat + " only */"
}
