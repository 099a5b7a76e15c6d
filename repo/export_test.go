package repo

// SetStatMaxKeys sets how many added data files a push checks with one
// Stat each before it lists the store instead, and returns a function that
// restores it (tests of the listing path use small catalogs).
func SetStatMaxKeys(n int) (restore func()) {
	old := statMaxKeys
	statMaxKeys = n
	return func() { statMaxKeys = old }
}
