package main

import (
	"database/sql"
	"fmt"
	"os"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/fdl-dev/fdl/internal/filelock"
)

// holdLockMain is the test command "holdlock CATALOG READYFILE": it opens
// CATALOG read-write with DuckDB (taking its file lock, as a DuckDB session
// with the catalog attached does), creates READYFILE, and holds the lock
// until READYFILE is removed, or for at most 60 s.
func holdLockMain() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: holdlock CATALOG READYFILE")
		os.Exit(2)
	}
	db, err := sql.Open("duckdb", os.Args[1])
	if err == nil {
		err = db.Ping()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "holdlock:", err)
		os.Exit(1)
	}
	os.WriteFile(os.Args[2], []byte("ready\n"), 0o644)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(os.Args[2]); os.IsNotExist(err) {
			break
		}
	}
	db.Close()
}

// holdFlockMain is the test command "holdflock FILE READYFILE": it takes the
// lock fdl takes on FILE (filelock.Lock, e.g. DIR/.fdl/lock as a running
// commit does), creates READYFILE and holds the lock until READYFILE is
// removed, or for at most 60 s.
func holdFlockMain() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: holdflock FILE READYFILE")
		os.Exit(2)
	}
	unlock, err := filelock.Lock(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "holdflock:", err)
		os.Exit(1)
	}
	defer unlock()
	os.WriteFile(os.Args[2], []byte("ready\n"), 0o644)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(os.Args[2]); os.IsNotExist(err) {
			return
		}
	}
}
