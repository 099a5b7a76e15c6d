package lakewriter

import (
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// endFile ends a data file and its open delete files (as DuckLake's
// DropDataFiles and DropDeleteFiles do).
func (u *undo) endFile(id int64) error {
	for _, table := range []string{"ducklake_data_file", "ducklake_delete_file"} {
		r, err := u.o.w.conn.ExecContext(u.o.ctx, fmt.Sprintf("UPDATE %s SET end_snapshot = %d WHERE data_file_id = %d AND end_snapshot IS NULL", table, u.o.id, id))
		if err != nil {
			return fmt.Errorf("end data file %d: %w", id, err)
		}
		n, _ := r.RowsAffected()
		u.res.Ended += n
	}
	return nil
}

// restoreDeletes gives data file to the delete files data file from had
// at lo. When from == to (the data file stays) the delete files begun
// since are ended and those ended since are copied; otherwise (to is a
// copy of from) every delete file from had at lo is copied for to. A copy
// gets a new delete_file_id.
func (u *undo) restoreDeletes(from, to int64) error {
	where := fmt.Sprintf("data_file_id = %d AND %s", from, visibleAt("", u.lo))
	if from == to {
		r, err := u.o.w.conn.ExecContext(u.o.ctx, fmt.Sprintf("UPDATE ducklake_delete_file SET end_snapshot = %d WHERE data_file_id = %d AND end_snapshot IS NULL AND begin_snapshot > %d", u.o.id, from, u.lo))
		if err != nil {
			return err
		}
		n, _ := r.RowsAffected()
		u.res.Ended += n
		where += " AND end_snapshot IS NOT NULL"
	}
	rows, err := u.o.w.conn.QueryContext(u.o.ctx, "SELECT delete_file_id FROM ducklake_delete_file WHERE "+where+" ORDER BY delete_file_id")
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		subst := map[string]string{"delete_file_id": strconv.FormatInt(u.o.newFileID(), 10), "data_file_id": strconv.FormatInt(to, 10)}
		if err := u.relink("ducklake_delete_file", "delete_file_id", id, true, subst); err != nil {
			return err
		}
		n, err := u.copyTable("ducklake_delete_file", `"begin_snapshot"`, `"end_snapshot"`, subst, fmt.Sprintf("delete_file_id = %d", id))
		if err != nil {
			return err
		}
		u.res.Reopened += n
	}
	return nil
}

// copyFile copies data file id as it was at lo under a new data_file_id:
// its row, the delete files and inlined deletions it had at lo, its column
// statistics and partition values.
func (u *undo) copyFile(id int64, d dataRow) error {
	nid := u.o.newFileID()
	ns := strconv.FormatInt(nid, 10)
	subst := map[string]string{"data_file_id": ns}
	if err := u.relink("ducklake_data_file", "data_file_id", id, false, subst); err != nil {
		return err
	}
	n, err := u.copyTable("ducklake_data_file", `"begin_snapshot"`, `"end_snapshot"`, subst, fmt.Sprintf("data_file_id = %d", id))
	if err != nil {
		return err
	}
	u.res.Reopened += n
	if err := u.restoreDeletes(id, nid); err != nil {
		return err
	}
	inl := fmt.Sprintf("ducklake_inlined_delete_%d", d.table)
	if u.cols[inl] != nil {
		n, err := u.copyTable(inl, `"begin_snapshot"`, "", map[string]string{"file_id": ns}, fmt.Sprintf("file_id = %d AND begin_snapshot <= %d", id, u.lo))
		if err != nil {
			return err
		}
		u.res.Reopened += n
	}
	for _, t := range []string{"ducklake_file_column_stats", "ducklake_file_partition_value", "ducklake_file_variant_stats"} {
		if u.cols[t] == nil {
			continue
		}
		if _, err := u.copyTable(t, "", "", map[string]string{"data_file_id": ns}, fmt.Sprintf("data_file_id = %d", id)); err != nil {
			return err
		}
	}
	u.copiedFiles = append(u.copiedFiles, fileCopy{table: d.table, id: nid, records: d.records, sizeBytes: d.sizeBytes})
	u.o.changes.insertedInto = append(u.o.changes.insertedInto, d.table)
	return nil
}

// inlinedCopies lists the inlined-data tables of a table into which rows
// were copied.
func (u *undo) inlinedCopies(tid int64) []vtable {
	var out []vtable
	for _, t := range u.tables {
		if t.grp == "inlined" && t.tid == tid {
			var n int
			if err := u.o.queryRow(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = %d", sqlquote.Ident(t.name), t.begin, u.o.id)).Scan(&n); err == nil && n > 0 {
				out = append(out, t)
			}
		}
	}
	return out
}

// checkFiles hands the paths of the data and delete files the snapshot
// makes visible again (copies begun at it) to Writer.CheckFiles.
func (u *undo) checkFiles() error {
	if u.o.w.CheckFiles == nil {
		return nil
	}
	var paths []string
	for _, t := range []string{"ducklake_data_file", "ducklake_delete_file"} {
		rows, err := u.o.w.conn.QueryContext(u.o.ctx, fmt.Sprintf("SELECT table_id, path, path_is_relative FROM %s WHERE begin_snapshot = %d", t, u.o.id))
		if err != nil {
			return err
		}
		for rows.Next() {
			var tid int64
			var path string
			var rel sql.NullBool
			if err := rows.Scan(&tid, &path, &rel); err != nil {
				rows.Close()
				return err
			}
			if !rel.Valid || rel.Bool {
				path = u.tableBase(tid) + path
			}
			paths = append(paths, path)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return u.o.w.CheckFiles(paths)
}

// tableBase is the path a table's relative file paths are relative to, as
// data_path, the schema's path and the table's path make it (DuckLake
// spec "Paths"; a relative data_path stays relative).
func (u *undo) tableBase(tid int64) string {
	var spath, tpath sql.NullString
	var srel, trel sql.NullBool
	err := u.o.queryRow(`SELECT s.path, s.path_is_relative, t.path, t.path_is_relative FROM ducklake_table t JOIN ducklake_schema s USING (schema_id)
		WHERE t.table_id = ? ORDER BY t.end_snapshot IS NULL DESC, t.begin_snapshot DESC, s.end_snapshot IS NULL DESC LIMIT 1`, tid).Scan(&spath, &srel, &tpath, &trel)
	base := u.o.w.dataPath
	if base != "" && !strings.HasSuffix(base, "/") {
		base += "/"
	}
	if err != nil {
		return base
	}
	if spath.Valid {
		if !srel.Valid || srel.Bool {
			base += spath.String
		} else {
			base = spath.String
		}
	}
	if tpath.Valid {
		if !trel.Valid || trel.Bool {
			base += tpath.String
		} else {
			base = tpath.String
		}
	}
	return base
}

// relink gives a data or delete file that comes back a file of its own:
// a copy (a copy-on-write clone where the file system has them) of the
// Parquet file under a new name in the same folder, which subst's path
// then names. A row
// copied with the same path as an ended row would lose its file to
// DuckLake's ducklake_expire_snapshots and ducklake_cleanup_old_files,
// which delete the path of an expired row without looking for other rows
// that read it. A file that is not local (an object store) keeps its path
// (UndoResult.Shared counts it); so does one that is gone (the caller's
// CheckFiles then says so).
func (u *undo) relink(table, idCol string, id int64, del bool, subst map[string]string) error {
	var tid int64
	var path string
	var rel sql.NullBool
	if err := u.o.queryRow(fmt.Sprintf("SELECT table_id, path, path_is_relative FROM %s WHERE %s = ?", table, idCol), id).Scan(&tid, &path, &rel); err != nil {
		return err
	}
	relative := !rel.Valid || rel.Bool
	full := path
	if relative {
		base := u.tableBase(tid)
		if u.o.w.dataDir != "" && strings.HasPrefix(base, u.o.w.dataPath) {
			base = u.o.w.dataDir + strings.TrimPrefix(base, u.o.w.dataPath)
		}
		full = base + path
	}
	local := localDir(full)
	if local == "" {
		u.res.Shared++
		return nil
	}
	if _, err := os.Stat(local); err != nil {
		return nil
	}
	uuid, err := u.o.uuidv7()
	if err != nil {
		return err
	}
	name := "ducklake-" + uuid + ".parquet"
	if del {
		name = "ducklake-" + uuid + "-delete.parquet"
	}
	dst := filepath.Join(filepath.Dir(local), name)
	if err := cloneOrCopy(local, dst); err != nil {
		return fmt.Errorf("give %s a file of its own: %w", full, err)
	}
	u.o.newFiles = append(u.o.newFiles, dst)
	u.res.Linked++
	newPath := path[:len(path)-len(filepath.Base(filepath.FromSlash(path)))] + name
	subst["path"] = sqlquote.String(newPath)
	return nil
}

// cloneOrCopy makes dst a copy of src: a copy-on-write clone where the
// file system has them (no bytes copied), else a plain copy, synced; dst
// must not exist. (Not a hard link: gc would then see two names of one
// file, and keep the old one with a warning on every run.)
func cloneOrCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		out.Close()
		os.Remove(dst)
		return err
	}
	if cloneFile(out, in) != nil {
		if _, err := io.Copy(out, in); err != nil {
			return fail(err)
		}
	}
	if err := out.Sync(); err != nil {
		return fail(err)
	}
	return out.Close()
}
