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
	Size           int64  `json:"size"`   // file_size_bytes; 0 when not recorded
	Delete         bool   `json:"delete"` // a delete file
	// Records is record_count (a data file) or delete_count (a delete
	// file): the rows the file holds; -1 when not recorded.
	Records int64 `json:"records"`
	// FooterSize is footer_size, the length of the Parquet footer (the
	// thrift FileMetaData, without its length and magic); 0 when not
	// recorded.
	FooterSize int64 `json:"footer_size"`
	// Format is file_format (a data file) or format (a delete file):
	// "parquet", "puffin" (DuckLake 1.1 deletion vectors); "" when not
	// recorded, which DuckLake reads as "parquet".
	Format string `json:"format,omitempty"`
	// Encrypted: the row holds an encryption_key (the file's footer is
	// encrypted; only a reader with the key reads it).
	Encrypted bool `json:"encrypted,omitempty"`
}
