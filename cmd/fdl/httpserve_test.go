package main

import (
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// httpServers are the servers httpserveCmd started, by script and name.
var httpServers sync.Map // map[string]*httptest.Server, key: workdir + "\x00" + VAR

// httpserveCmd is the script command "httpserve DIR VAR": serve folder DIR
// read-only over http:// (as a web server serves a published repository)
// and set $VAR to its URL; "httpserve -stop VAR" stops it, so the
// repository is out of reach. Servers still running stop with the script.
func httpserveCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: httpserve DIR VAR | httpserve -stop VAR")
	}
	key := ts.Getenv("WORK") + "\x00" + args[1]
	if args[0] == "-stop" {
		s, ok := httpServers.LoadAndDelete(key)
		if !ok {
			ts.Fatalf("httpserve: no server %s", args[1])
		}
		s.(*httptest.Server).Close()
		return
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(ts.MkAbs(args[0]))))
	httpServers.Store(key, srv)
	ts.Defer(func() {
		if s, ok := httpServers.LoadAndDelete(key); ok {
			s.(*httptest.Server).Close()
		}
	})
	ts.Setenv(args[1], srv.URL)
}
