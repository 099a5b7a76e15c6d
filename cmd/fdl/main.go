// Command fdl keeps versions of DuckLake catalogs the way Git keeps commits.
package main

import "os"

func main() { os.Exit(Main()) }
