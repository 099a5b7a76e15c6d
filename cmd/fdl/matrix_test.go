package main

import "os"

// The store matrix of this package's tests. Every test runs on a folder
// and on the S3 server in full. On GCS and Azure, `make test` runs the
// parts whose behaviour depends on the store (credentials, conditional
// writes, listings, deletes, prefixes, the store's own URL spellings)
// and leaves the parts that only drive the working directory and the
// catalogs over the same store calls (already run on S3) to `make soak`,
// which sets FDL_ALL_STORES=1: there every test runs on every store. The
// choice keeps `make test` inside its budget (docs/stores.md, "Testing against servers").

// allStores reports whether FDL_ALL_STORES=1 asks for the whole store
// matrix (make soak sets it).
func allStores() bool { return os.Getenv("FDL_ALL_STORES") == "1" }

// storeScripts are the scripts of testdata/script that TestScriptsGCS and
// TestScriptsAzure run in `make test`, each with the store behaviour it
// exercises; with FDL_ALL_STORES=1 they run every script that uses $REPO.
// The others (branching, ci, diff, format_upgrade, history_rewrite,
// migrate, pull, requests, revert, signing, sqlite) drive checkouts,
// commits and catalogs through the same store calls these make, and run on
// the folder and on S3 in `make test`.
var storeScripts = map[string]string{
	"auth":      "credentials: a refused key is named, never printed (S3 only today)",
	"init":      "the first conditional writes of a repository; the URL printed",
	"core_loop": "the secret and ATTACH line per store; put, get and the ref swap",
	"nonff":     "the conditional write that refuses a second push (exit 3)",
	"gc":        "listings and deletes, the intent and floor objects",
	"mirror":    "copying between prefixes: listings, conditional ref writes",
	"lock":      "pins read from the store; attach lines per store",
	"paths":     "prefixes: the URL and ATTACH line of a repository under one",
	"retention": "the policy object: read, replaced, damaged",
	"refusals":  "ref names and a ref that is also a folder of refs, per store",
	"reflog":    "appended ref log objects, listed newest first",
}

// storeRounds returns how many rounds a repeated race on a cloud store
// runs in `make test` (one) or, with FDL_ALL_STORES=1, full (the folder's
// count, given).
func storeRounds(full int) int {
	if allStores() {
		return full
	}
	return 1
}
