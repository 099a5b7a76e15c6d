package repo

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/store"
)

// The DuckDB ATTACH statement readers and writers are given.

// AttachStatement returns the DuckDB statement that attaches a catalog file
// as a DuckLake database named alias. When the catalog's data_path is the
// repository's data path as recorded at init but the repository is now
// reached at another location, DATA_PATH and OVERRIDE_DATA_PATH point
// DuckDB at the data/ folder as reached now (docs/spec.md §8). When the
// catalog or the data it reads lives in the repository's object store (S3,
// GCS, Azure), the statement is preceded, on the same line, by the DuckDB
// CREATE SECRET the reader needs (without credentials: a credential chain
// or placeholders; docs/stores.md).
func (r *Repo) AttachStatement(catalogPath, dataPath, alias string, readOnly bool) string {
	var opts []string
	if dataPath == r.cfg.DataPath && r.DataLocation() != r.cfg.DataPath {
		opts = append(opts, "DATA_PATH "+sqlquote.String(r.DataLocation()), "OVERRIDE_DATA_PATH true")
		dataPath = r.DataLocation()
	}
	secret := ""
	if sh, ok := r.st.(store.SecretProvider); ok {
		root := r.st.Location("")
		if strings.HasPrefix(catalogPath, root) || strings.HasPrefix(dataPath, root) {
			secret = sh.DuckDBSecret() + " "
		}
	}
	if readOnly {
		opts = append(opts, "READ_ONLY")
	}
	prefix := "ducklake:"
	if b, err := ducklake.DetectBackend(catalogPath); err == nil && b == ducklake.BackendSQLite {
		prefix = "ducklake:sqlite:"
		opts = append(slices.Clone(SQLiteAttachOptions), opts...)
	}
	s := secret + "ATTACH OR REPLACE " + sqlquote.String(prefix+catalogPath) + " AS " + sqlquote.IdentIfNeeded(alias)
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	return s + ";"
}

// SQLiteAttachOptions are the ATTACH options fdl prints for a SQLite working
// catalog: WAL journal mode and a busy timeout (milliseconds), passed by the
// ducklake extension to DuckDB's sqlite extension (META_ prefix), so several
// DuckDB processes can attach and write at once.
var SQLiteAttachOptions = []string{"META_JOURNAL_MODE 'WAL'", fmt.Sprintf("META_BUSY_TIMEOUT %d", ducklake.SQLiteBusyTimeout)}

// WithReaderNote appends to an ATTACH statement for a catalog of DuckLake
// format the note naming the DuckDB releases that read it, when current
// DuckDB does not (ducklake.ReaderNote; docs/spec.md §5).
func WithReaderNote(stmt, format string) string {
	if note := ducklake.ReaderNote(format); note != "" {
		return stmt + " " + note
	}
	return stmt
}
