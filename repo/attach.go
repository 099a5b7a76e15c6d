package repo

import (
	"context"
	"fmt"
	"hash/fnv"
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
	override := dataPath == r.cfg.DataPath && r.DataLocation() != r.cfg.DataPath
	return attachStatement(r.st, catalogPath, dataPath, alias, readOnly, override)
}

// CachedAttachStatement returns the read-only statement that attaches a
// local copy of a version's catalog (a reader's cache, docs/spec.md §21.1)
// whose DuckLake data_path is dataPath: when that is the repository's own
// data path, DATA_PATH and OVERRIDE_DATA_PATH always name the data/ folder
// as the repository is reached now (the copy lies elsewhere, and the line
// says where the data is read from); an imported lake's own data path is
// left as the catalog holds it. The DuckDB CREATE SECRET the data's store
// needs precedes it, as for AttachStatement.
func (r *Repo) CachedAttachStatement(catalogPath, dataPath, alias string) string {
	return attachStatement(r.st, catalogPath, dataPath, alias, true, dataPath == r.cfg.DataPath)
}

// attachStatement builds the statement: override puts DATA_PATH (the
// store's data/ location) and OVERRIDE_DATA_PATH in it.
func attachStatement(st store.Store, catalogPath, dataPath, alias string, readOnly, override bool) string {
	var opts []string
	if override {
		opts = append(opts, "DATA_PATH "+sqlquote.String(dataLocation(st)), "OVERRIDE_DATA_PATH true")
		dataPath = dataLocation(st)
	}
	secret := ""
	if sh, ok := st.(store.SecretProvider); ok {
		root := st.Location("")
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
	opts = append(opts, "METADATA_CATALOG "+sqlquote.String(metadataCatalog(alias, prefix+catalogPath)))
	s := secret + "ATTACH OR REPLACE " + sqlquote.String(prefix+catalogPath) + " AS " + sqlquote.IdentIfNeeded(alias)
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	return s + ";"
}

// metadataCatalog is the name of the database DuckDB's ducklake extension
// attaches a DuckLake catalog file under for the database alias:
// "__ducklake_metadata_<alias>_<8 hex digits>", the digits an FNV-1a hash
// of the catalog as attached. Its default, without the hash, is the same
// for every file attached as alias; ATTACH OR REPLACE of another file
// (the next version of a ref, a mirror's copy, a cached copy) under the
// same alias then leaves the new database without its metadata catalog
// ("Catalog __ducklake_metadata_x does not exist", ducklake extension
// of DuckDB 1.5.5). One name per file keeps the line safe to run again,
// and beside any other line fdl prints.
func metadataCatalog(alias, catalog string) string {
	h := fnv.New32a()
	h.Write([]byte(catalog))
	return fmt.Sprintf("__ducklake_metadata_%s_%08x", alias, h.Sum32())
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

// OfflineAttach is the read-only statement for a local copy of a
// version's catalog (a reader's cache) when the repository at url cannot
// be read: the store is opened (no object is read) only to name its data/
// location and the CREATE SECRET its data needs. The catalog's own
// data_path decides as CachedAttachStatement does, without fdl.json: when
// it is origin (the repository data path CachedCatalog recorded beside the
// cached entry, cache.Origin; "" for none) or the repository's data/
// location as reached at url, DATA_PATH and OVERRIDE_DATA_PATH name that
// location (the line is then the one an online attach prints); otherwise
// the catalog's data_path is kept and moved is true: the lake may have
// been imported with its own data path, or the repository moved, and fdl
// cannot tell which offline. The reader note of older DuckLake formats follows,
// as WithReaderNote. Errors: opening the store (a URL fdl does not know);
// reading the catalog (ducklake.Open's).
func OfflineAttach(ctx context.Context, url, catalogPath, origin, alias string) (stmt string, moved bool, err error) {
	st, err := store.Open(ctx, url)
	if err != nil {
		return "", false, err
	}
	defer st.Close()
	cat, err := ducklake.Open(ctx, catalogPath)
	if err != nil {
		return "", false, fmt.Errorf("cached catalog %s: %w", catalogPath, err)
	}
	dataPath, format := cat.DataPath(), cat.Format()
	cat.Close()
	same := dataPath == dataLocation(st) || origin != "" && dataPath == origin
	return WithReaderNote(attachStatement(st, catalogPath, dataPath, alias, true, same), format), !same, nil
}
