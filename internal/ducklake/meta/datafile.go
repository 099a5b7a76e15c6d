package meta

// DataFile is one row of ducklake_data_file or ducklake_delete_file, its
// path resolved as DuckLake resolves it (against its table's, schema's and
// the catalog's data_path).
type DataFile struct {
	ID             int64  `json:"id"`
	TableID        int64  `json:"table_id"`
	Path           string `json:"path"` // as stored
	PathIsRelative bool   `json:"path_is_relative"`
	ResolvedPath   string `json:"resolved_path"` // against table, schema and data_path
	BeginSnapshot  int64  `json:"begin_snapshot"`
	EndSnapshot    *int64 `json:"end_snapshot,omitempty"`
	Size           int64  `json:"size"`
	Delete         bool   `json:"delete"` // a delete file
}
