package main

import (
	"sync"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/azure"
	"github.com/fdl-dev/fdl/internal/store/folder"
	"github.com/fdl-dev/fdl/internal/store/gcs"
	"github.com/fdl-dev/fdl/internal/store/httpstore"
	"github.com/fdl-dev/fdl/internal/store/memory"
	"github.com/fdl-dev/fdl/internal/store/s3"
)

var registerOnce sync.Once

// registerStores makes every kind of store fdl links known to store.Open,
// in the order its messages name them: "use a folder path, file://, s3://,
// gs://, azblob:// or http(s)://" (mem:// is for tests and goes unnamed).
func registerStores() {
	registerOnce.Do(func() {
		for _, b := range []store.Backend{
			folder.Backend(),
			memory.Backend(),
			s3.Backend(),
			gcs.Backend(),
			azure.Backend(),
			httpstore.Backend(),
		} {
			store.Register(b)
		}
	})
}
