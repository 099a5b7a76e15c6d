package realduck

// Older releases, installed by scripts/pyenv.sh beside V15 and V20, whose
// ducklake extension writes (and reads READ_ONLY) an older DuckLake format.
// The migration tests write lakes with them and compare what each reads
// from its own catalog with what DuckDB 1.5.5 reads from fdl's migrated copy.
const (
	V132 Release = "1.3.2" // DuckDB 1.3.2, DuckLake 0.2
	V144 Release = "1.4.4" // DuckDB 1.4.4, DuckLake 0.3
)
