// Command lakewrite adds one DuckLake snapshot to a catalog with fdl's
// spec-following writer, for the demo on machines where DuckDB's ducklake
// extension cannot be installed. It is not part of fdl.
//
//	lakewrite CATALOG OP ARGS...
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintf(os.Stderr, "usage: lakewrite CATALOG OP ARGS...\noperations:\n%s\n", lakewriter.Ops)
		os.Exit(2)
	}
	ctx := context.Background()
	w, err := lakewriter.Open(ctx, os.Args[1])
	if err == nil {
		w.Author = os.Getenv("USER")
		err = lakewriter.Apply(ctx, w, os.Args[2], os.Args[3:])
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lakewrite:", err)
		os.Exit(1)
	}
}
