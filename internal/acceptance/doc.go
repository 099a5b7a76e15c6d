// Package acceptance holds fdl's acceptance tests: scripts that run the
// built fdl binary as a user does and judge everything it hands to DuckDB
// users with the real DuckDB 1.5.5 and DuckDB's own ducklake, sqlite,
// httpfs and aws extensions (scripts/pyenv.sh installs them; the tests
// fail under CI when they are missing).
//
// Every ATTACH line fdl prints is executed exactly as printed; pipelines
// write with the real extension; every version the scripts publish is read
// back through the line `fdl show` prints and compared, table by table
// (row count and a checksum of the rows), with what the writer saw at that
// snapshot and with the version's dataset.json, and time travel inside the
// version is compared with the writer's earlier snapshots.
//
// The tests drive the CLI only (its printed lines and documented --json
// shapes), never the Go packages, so they hold whatever the code beneath
// looks like. The package has no code outside its tests.
package acceptance
