package ducklake

// SimplePathSQL is simplePath, for the external tests.
const SimplePathSQL = simplePath
