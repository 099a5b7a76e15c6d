package store

// ResetRegistryForTest forgets every registered backend.
func ResetRegistryForTest() {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry = nil
}
