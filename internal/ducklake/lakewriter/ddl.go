package lakewriter

import (
	"context"
	"fmt"
	"strings"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// generatePath names the folder of a new schema or table the way
// ducklake_catalog.cpp GeneratePathFromName does: the name itself when it
// has only ASCII letters, digits, "_" and "-", otherwise the entry's UUID;
// always followed by "/".
func generatePath(uuid, name string) string {
	for _, c := range []byte(name) {
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' {
			continue
		}
		return uuid + "/"
	}
	return name + "/"
}

func checkName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty %s name", ErrInvalid, kind)
	}
	if strings.ContainsRune(name, 0) {
		return fmt.Errorf("%w: %s name contains NUL", ErrInvalid, kind)
	}
	return nil
}

// canInline reports whether no column takes a name an inlined-data table
// uses for its own columns (ducklake_metadata_manager.cpp
// DuckLakeInlinedColNames::ConflictsWith).
func (o *op) canInline(cols []column) bool {
	for _, c := range cols {
		for _, n := range o.w.lay.inl.reserved() {
			if strings.EqualFold(c.name, n) {
				return false
			}
		}
	}
	return true
}

// createInlinedTable creates ducklake_inlined_data_<table_id>_<schema_version>
// with row_id, begin_snapshot, end_snapshot (from 1.1 on prefixed with
// "_ducklake_") and the table's columns, and
// registers it in ducklake_inlined_data_tables (ducklake_metadata_manager.cpp
// InlinedTableNameFor, InlinedTableDdlSql, GetInlinedTableQueries). The
// schema_version must already be the new snapshot's.
func (o *op) createInlinedTable(tableID int64, cols []column) (string, error) {
	name := fmt.Sprintf("ducklake_inlined_data_%d_%d", tableID, o.schemaVersion)
	n := o.w.lay.inl
	defs := []string{sqlquote.Ident(n.rowID) + " BIGINT", sqlquote.Ident(n.begin) + " BIGINT", sqlquote.Ident(n.end) + " BIGINT"}
	for _, c := range cols {
		t, err := duckDBType(c.typ)
		if err != nil {
			return "", err
		}
		defs = append(defs, sqlquote.Ident(c.name)+" "+t)
	}
	if err := o.exec("CREATE TABLE IF NOT EXISTS " + sqlquote.Ident(name) + "(" + strings.Join(defs, ", ") + ")"); err != nil {
		return "", err
	}
	if err := o.exec(fmt.Sprintf("INSERT INTO ducklake_inlined_data_tables (table_id, table_name, schema_version) VALUES (%d, %s, %d)", tableID, sqlquote.String(name), o.schemaVersion)); err != nil {
		return "", err
	}
	return name, nil
}

// schemaChangedInlining creates a new inlined-data table after the columns of
// a table changed (or it was created or renamed), when data inlining is on
// for it (ducklake_transaction_state.cpp GetNewTableInfo: new_inlined_data_tables;
// ducklake_metadata_manager.cpp WriteNewInlinedTables).
func (o *op) schemaChangedInlining(schemaID, tableID int64) error {
	limit, err := o.inliningLimit(schemaID, tableID)
	if err != nil || limit == 0 {
		return err
	}
	cols, err := o.columnsAt(tableID, o.id)
	if err != nil {
		return err
	}
	if !o.canInline(cols) {
		return nil
	}
	_, err = o.createInlinedTable(tableID, cols)
	return err
}

// insertColumn writes one ducklake_column row as
// ducklake_metadata_manager.cpp ColumnToSQLRecursive does: column_order =
// column_id, initial_default NULL, default_value the string 'NULL' with
// default_value_type 'literal' and default_value_dialect 'duckdb' (0.4+; a
// 0.3 catalog stores NULL, see dltest-per-table-schema).
func (o *op) insertColumn(tableID, columnID int64, c ColumnDef, typ string) error {
	if o.w.lay.columnDefaultType {
		return o.exec(fmt.Sprintf(`INSERT INTO ducklake_column (column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, column_type, initial_default, default_value, nulls_allowed, parent_column, default_value_type, default_value_dialect)
			VALUES (%d, %d, NULL, %d, %d, %s, %s, NULL, 'NULL', %t, NULL, 'literal', 'duckdb')`,
			columnID, o.id, tableID, columnID, sqlquote.String(c.Name), sqlquote.String(typ), c.Nullable))
	}
	return o.exec(fmt.Sprintf(`INSERT INTO ducklake_column (column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, column_type, initial_default, default_value, nulls_allowed, parent_column)
		VALUES (%d, %d, NULL, %d, %d, %s, %s, NULL, NULL, %t, NULL)`,
		columnID, o.id, tableID, columnID, sqlquote.String(c.Name), sqlquote.String(typ), c.Nullable))
}

// CreateTable creates a table with the given columns in one snapshot and
// returns its table_id. It writes a ducklake_table row (new table_id from
// next_catalog_id, UUIDv7, path "<name>/" relative to the schema, or
// "<uuid>/" when the name has other characters than A-Z a-z 0-9 _ -), one
// ducklake_column row per column (column_id 1, 2, … in order), a
// ducklake_schema_versions row, and, when data inlining is on (default in
// 0.4/1.0), an empty ducklake_inlined_data_<id>_<schema_version> table; the
// snapshot bumps schema_version and records `created_table:"schema"."name"`.
// Sources: ducklake_schema_entry.cpp CreateTable, ducklake_metadata_manager.cpp
// WriteNewTables, ducklake_transaction_state.cpp CommitChanges.
// Errors: ErrNotFound (schema), ErrAlreadyExists (table or view of that name),
// ErrInvalid (no columns, duplicate or empty names, unknown type).
func (w *Writer) CreateTable(ctx context.Context, schema, name string, cols []ColumnDef) (int64, error) {
	var tableID int64
	err := w.run(ctx, fmt.Sprintf("create table %q.%q", schema, name), func(o *op) error {
		if err := checkName("table", name); err != nil {
			return err
		}
		if len(cols) == 0 {
			return fmt.Errorf("%w: a table needs at least one column", ErrInvalid)
		}
		types := make([]string, len(cols))
		seen := map[string]bool{}
		for i, c := range cols {
			if err := checkName("column", c.Name); err != nil {
				return err
			}
			if seen[strings.ToLower(c.Name)] {
				return fmt.Errorf("%w: duplicate column %q", ErrInvalid, c.Name)
			}
			seen[strings.ToLower(c.Name)] = true
			t, err := normalizeType(c.Type)
			if err != nil {
				return fmt.Errorf("column %q: %w", c.Name, err)
			}
			types[i] = t
		}
		s, err := o.schema(schema)
		if err != nil {
			return err
		}
		if taken, err := o.nameTaken(s.id, name); err != nil {
			return err
		} else if taken {
			return fmt.Errorf("table %q.%q: %w", schema, name, ErrAlreadyExists)
		}
		tableID = o.newCatalogID()
		uuid, err := o.uuidv7()
		if err != nil {
			return err
		}
		if err := o.exec(fmt.Sprintf(`INSERT INTO ducklake_table (table_id, table_uuid, begin_snapshot, end_snapshot, schema_id, table_name, path, path_is_relative)
			VALUES (%d, %s::UUID, %d, NULL, %d, %s, %s, true)`, tableID, sqlquote.String(uuid), o.id, s.id, sqlquote.String(name), sqlquote.String(generatePath(uuid, name)))); err != nil {
			return err
		}
		for i, c := range cols {
			if err := o.insertColumn(tableID, int64(i+1), c, types[i]); err != nil {
				return err
			}
		}
		if err := o.tableSchemaVersion(tableID); err != nil {
			return err
		}
		if err := o.schemaChangedInlining(s.id, tableID); err != nil {
			return err
		}
		o.changes.createdTables = append(o.changes.createdTables, sqlquote.Ident(schema)+"."+sqlquote.Ident(name))
		return nil
	})
	if err != nil {
		return 0, err
	}
	return tableID, nil
}

// RenameTable renames a table in one snapshot: the current ducklake_table row
// gets end_snapshot and a new row with the same table_id, UUID and path and
// the new name begins (ducklake_metadata_manager.cpp DropTables(renamed) +
// WriteNewTables); columns are untouched. Like the extension it records a
// per-table schema version, a new inlined-data table when inlining is on,
// and `created_table:"schema"."new"` (ducklake_transaction.cpp
// GetTransactionTableChanges: RENAMED counts as created).
// Errors: ErrNotFound, ErrAlreadyExists, ErrInvalid.
func (w *Writer) RenameTable(ctx context.Context, schema, oldName, newName string) error {
	return w.run(ctx, fmt.Sprintf("rename table %q.%q to %q", schema, oldName, newName), func(o *op) error {
		if err := checkName("table", newName); err != nil {
			return err
		}
		t, err := o.table(schema, oldName)
		if err != nil {
			return err
		}
		if taken, err := o.nameTaken(t.schema.id, newName); err != nil {
			return err
		} else if taken {
			return fmt.Errorf("table %q.%q: %w", schema, newName, ErrAlreadyExists)
		}
		if err := o.exec(fmt.Sprintf("UPDATE ducklake_table SET end_snapshot = %d WHERE end_snapshot IS NULL AND table_id = %d", o.id, t.id)); err != nil {
			return err
		}
		if err := o.exec(fmt.Sprintf(`INSERT INTO ducklake_table (table_id, table_uuid, begin_snapshot, end_snapshot, schema_id, table_name, path, path_is_relative)
			SELECT table_id, table_uuid, %d, NULL, schema_id, %s, path, path_is_relative FROM ducklake_table WHERE table_id = %d AND end_snapshot = %d`,
			o.id, sqlquote.String(newName), t.id, o.id)); err != nil {
			return err
		}
		if err := o.tableSchemaVersion(t.id); err != nil {
			return err
		}
		if err := o.schemaChangedInlining(t.schema.id, t.id); err != nil {
			return err
		}
		o.changes.createdTables = append(o.changes.createdTables, sqlquote.Ident(schema)+"."+sqlquote.Ident(newName))
		return nil
	})
}

// DropTable drops a table in one snapshot: end_snapshot is set on its
// ducklake_table, ducklake_partition_info, ducklake_column,
// ducklake_column_tag, ducklake_data_file, ducklake_delete_file, ducklake_tag
// and ducklake_sort_info rows (ducklake_metadata_manager.cpp DropTables);
// files stay on disk. Records `dropped_table:<id>` and bumps schema_version.
// Errors: ErrNotFound.
func (w *Writer) DropTable(ctx context.Context, schema, name string) error {
	return w.runOnTable(ctx, fmt.Sprintf("drop table %q.%q", schema, name), schema, name, func(o *op, t tableInfo) error {
		for _, e := range []struct{ table, idCol string }{
			{"ducklake_table", "table_id"},
			{"ducklake_partition_info", "table_id"},
			{"ducklake_column", "table_id"},
			{"ducklake_column_tag", "table_id"},
			{"ducklake_data_file", "table_id"},
			{"ducklake_delete_file", "table_id"},
			{"ducklake_tag", "object_id"},
			{"ducklake_sort_info", "table_id"},
		} {
			if !o.w.lay.tables[e.table] {
				continue
			}
			if err := o.exec(fmt.Sprintf("UPDATE %s SET end_snapshot = %d WHERE end_snapshot IS NULL AND %s IN (%d)", e.table, o.id, e.idCol, t.id)); err != nil {
				return err
			}
		}
		if err := o.bumpSchema(); err != nil {
			return err
		}
		o.changes.droppedTables = append(o.changes.droppedTables, t.id)
		return nil
	})
}

// AddColumn adds a nullable column in one snapshot. Its column_id is one more
// than the largest column_id the table ever had (ducklake_metadata_manager.cpp
// GetNextColumnId), column_order equals column_id. Records a per-table schema
// version, a new inlined-data table when inlining is on, and
// `altered_table:<id>`. Errors: ErrNotFound, ErrAlreadyExists, ErrInvalid
// (NOT NULL columns cannot be added without a default, which is not supported).
func (w *Writer) AddColumn(ctx context.Context, schema, table string, col ColumnDef) error {
	return w.run(ctx, fmt.Sprintf("add column %q to %q.%q", col.Name, schema, table), func(o *op) error {
		if err := checkName("column", col.Name); err != nil {
			return err
		}
		if !col.Nullable {
			return fmt.Errorf("%w: adding a NOT NULL column needs a default value, which is not supported", ErrInvalid)
		}
		typ, err := normalizeType(col.Type)
		if err != nil {
			return err
		}
		t, cols, err := o.tableColumns(schema, table)
		if err != nil {
			return err
		}
		for _, c := range cols {
			if strings.EqualFold(c.name, col.Name) {
				return fmt.Errorf("column %q: %w", col.Name, ErrAlreadyExists)
			}
		}
		var next int64
		if err := o.queryRow("SELECT coalesce(max(column_id), 0) + 1 FROM ducklake_column WHERE table_id = ?", t.id).Scan(&next); err != nil {
			return err
		}
		if err := o.insertColumn(t.id, next, col, typ); err != nil {
			return err
		}
		return o.alteredTable(t)
	})
}

func (o *op) alteredTable(t tableInfo) error {
	if err := o.tableSchemaVersion(t.id); err != nil {
		return err
	}
	if err := o.schemaChangedInlining(t.schema.id, t.id); err != nil {
		return err
	}
	o.changes.alteredTables = append(o.changes.alteredTables, t.id)
	return nil
}

// DropColumn drops a column in one snapshot: its ducklake_column row and its
// column tags get end_snapshot (ducklake_metadata_manager.cpp
// WriteDroppedColumns, WriteExpiredColumnTags). Records a per-table schema
// version, a new inlined-data table when inlining is on, and
// `altered_table:<id>`. Errors: ErrNotFound, ErrInvalid (last column).
func (w *Writer) DropColumn(ctx context.Context, schema, table, name string) error {
	return w.runOnColumns(ctx, fmt.Sprintf("drop column %q of %q.%q", name, schema, table), schema, table, func(o *op, t tableInfo, cols []column) error {
		c, ok := findColumn(cols, name)
		if !ok {
			return fmt.Errorf("column %q: %w", name, ErrNotFound)
		}
		if len(cols) == 1 {
			return fmt.Errorf("%w: cannot drop the only column of %q.%q", ErrInvalid, schema, table)
		}
		for _, tbl := range []string{"ducklake_column", "ducklake_column_tag"} {
			if err := o.exec(fmt.Sprintf("UPDATE %s SET end_snapshot = %d WHERE table_id = %d AND column_id = %d AND end_snapshot IS NULL", tbl, o.id, t.id, c.id)); err != nil {
				return err
			}
		}
		return o.alteredTable(t)
	})
}

// RenameColumn renames a column in one snapshot: the current ducklake_column
// row gets end_snapshot and a copy with the same column_id, order, type and
// defaults and the new name begins (ducklake_transaction_state.cpp
// GetNewTableInfo: RENAME_COLUMN drops and re-adds the field). Records a
// per-table schema version, a new inlined-data table when inlining is on,
// and `altered_table:<id>`. Errors: ErrNotFound, ErrAlreadyExists, ErrInvalid.
func (w *Writer) RenameColumn(ctx context.Context, schema, table, oldName, newName string) error {
	return w.run(ctx, fmt.Sprintf("rename column %q of %q.%q to %q", oldName, schema, table, newName), func(o *op) error {
		if err := checkName("column", newName); err != nil {
			return err
		}
		t, cols, err := o.tableColumns(schema, table)
		if err != nil {
			return err
		}
		c, ok := findColumn(cols, oldName)
		if !ok {
			return fmt.Errorf("column %q: %w", oldName, ErrNotFound)
		}
		for _, other := range cols {
			if other.id != c.id && strings.EqualFold(other.name, newName) {
				return fmt.Errorf("column %q: %w", newName, ErrAlreadyExists)
			}
		}
		if err := o.exec(fmt.Sprintf("UPDATE ducklake_column SET end_snapshot = %d WHERE table_id = %d AND column_id = %d AND end_snapshot IS NULL", o.id, t.id, c.id)); err != nil {
			return err
		}
		extra := ""
		if o.w.lay.columnDefaultType {
			extra = ", default_value_type, default_value_dialect"
		}
		if err := o.exec(fmt.Sprintf(`INSERT INTO ducklake_column (column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, column_type, initial_default, default_value, nulls_allowed, parent_column%s)
			SELECT column_id, %d, NULL, table_id, column_order, %s, column_type, initial_default, default_value, nulls_allowed, parent_column%s
			FROM ducklake_column WHERE table_id = %d AND column_id = %d AND end_snapshot = %d`,
			extra, o.id, sqlquote.String(newName), extra, t.id, c.id, o.id)); err != nil {
			return err
		}
		return o.alteredTable(t)
	})
}

// CreateView creates a view in one snapshot: a ducklake_view row with a new
// view_id from next_catalog_id, a random UUID, dialect "duckdb", the query as
// DuckDB prints it back (json_deserialize_sql(json_serialize_sql(query)),
// the text a parsed statement's ToString gives, like
// ducklake_schema_entry.cpp CreateView stores) and no column aliases. Bumps
// schema_version and records `created_view:"schema"."name"`.
// Errors: ErrNotFound, ErrAlreadyExists, ErrInvalid (not one SELECT).
func (w *Writer) CreateView(ctx context.Context, schema, name, query string) error {
	return w.run(ctx, fmt.Sprintf("create view %q.%q", schema, name), func(o *op) error {
		if err := checkName("view", name); err != nil {
			return err
		}
		s, err := o.schema(schema)
		if err != nil {
			return err
		}
		if taken, err := o.nameTaken(s.id, name); err != nil {
			return err
		} else if taken {
			return fmt.Errorf("view %q.%q: %w", schema, name, ErrAlreadyExists)
		}
		var normalized string
		if err := o.queryRow("SELECT json_deserialize_sql(json_serialize_sql(" + sqlquote.String(trimQuery(query)) + "))").Scan(&normalized); err != nil {
			return fmt.Errorf("%w: view query: %v", ErrInvalid, err)
		}
		viewID := o.newCatalogID()
		if err := o.exec(fmt.Sprintf(`INSERT INTO ducklake_view (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
			VALUES (%d, gen_random_uuid(), %d, NULL, %d, %s, 'duckdb', %s, '')`, viewID, o.id, s.id, sqlquote.String(name), sqlquote.String(normalized))); err != nil {
			return err
		}
		if err := o.bumpSchema(); err != nil {
			return err
		}
		o.changes.createdViews = append(o.changes.createdViews, sqlquote.Ident(schema)+"."+sqlquote.Ident(name))
		return nil
	})
}

// DropView drops a view in one snapshot: end_snapshot on its ducklake_view
// row and its ducklake_tag rows (ducklake_metadata_manager.cpp DropViews).
// Bumps schema_version and records `dropped_view:<id>`. Errors: ErrNotFound.
func (w *Writer) DropView(ctx context.Context, schema, name string) error {
	return w.run(ctx, fmt.Sprintf("drop view %q.%q", schema, name), func(o *op) error {
		s, err := o.schema(schema)
		if err != nil {
			return err
		}
		var viewID int64
		if err := o.queryRow("SELECT view_id FROM ducklake_view WHERE end_snapshot IS NULL AND schema_id = ? AND view_name = ?", s.id, name).Scan(&viewID); err != nil {
			return fmt.Errorf("view %q.%q: %w", schema, name, ErrNotFound)
		}
		if err := o.exec(fmt.Sprintf("UPDATE ducklake_view SET end_snapshot = %d WHERE end_snapshot IS NULL AND view_id IN (%d)", o.id, viewID)); err != nil {
			return err
		}
		if err := o.exec(fmt.Sprintf("UPDATE ducklake_tag SET end_snapshot = %d WHERE end_snapshot IS NULL AND object_id IN (%d)", o.id, viewID)); err != nil {
			return err
		}
		if err := o.bumpSchema(); err != nil {
			return err
		}
		o.changes.droppedViews = append(o.changes.droppedViews, viewID)
		return nil
	})
}

// CreateSchema creates a schema in one snapshot: a ducklake_schema row with a
// new schema_id from next_catalog_id, a UUIDv7 and path "<name>/" (or
// "<uuid>/", see CreateTable) relative to data_path
// (ducklake_metadata_manager.cpp WriteNewSchemas). Bumps schema_version and
// records `created_schema:"name"`. Errors: ErrAlreadyExists, ErrInvalid.
func (w *Writer) CreateSchema(ctx context.Context, name string) error {
	return w.run(ctx, fmt.Sprintf("create schema %q", name), func(o *op) error {
		if err := checkName("schema", name); err != nil {
			return err
		}
		if _, err := o.schema(name); err == nil {
			return fmt.Errorf("schema %q: %w", name, ErrAlreadyExists)
		}
		id := o.newCatalogID()
		uuid, err := o.uuidv7()
		if err != nil {
			return err
		}
		if err := o.exec(fmt.Sprintf(`INSERT INTO ducklake_schema (schema_id, schema_uuid, begin_snapshot, end_snapshot, schema_name, path, path_is_relative)
			VALUES (%d, %s::UUID, %d, NULL, %s, %s, true)`, id, sqlquote.String(uuid), o.id, sqlquote.String(name), sqlquote.String(generatePath(uuid, name)))); err != nil {
			return err
		}
		if err := o.bumpSchema(); err != nil {
			return err
		}
		o.changes.createdSchemas = append(o.changes.createdSchemas, name)
		return nil
	})
}
