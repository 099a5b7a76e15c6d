// Command latencyproxy is a reverse HTTP proxy that holds every request
// for a fixed delay before passing it on, so that a store server on
// loopback answers as slowly as a cloud region would (fdl's history
// benchmark, scripts/bench-history.sh). It counts the requests it passes.
//
//	latencyproxy [-delay 20ms] -target http://127.0.0.1:7070 -addr-file FILE
//
// It listens on a free loopback port and writes "127.0.0.1:PORT" to FILE
// once it accepts connections. GET /.latencyproxy/count returns the number
// of requests passed so far (bucket names never begin with a dot, so the
// path reaches no S3 bucket); POST /.latencyproxy/reset sets it to zero.
// The signature of S3 requests covers the Host header, which the proxy
// keeps as the client sent it.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync/atomic"
	"time"
)

func main() {
	delay := flag.Duration("delay", 20*time.Millisecond, "time each request is held before it is passed on")
	target := flag.String("target", "", "URL of the server to pass requests to")
	addrFile := flag.String("addr-file", "", "file to write the listening address to")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" || *addrFile == "" {
		fmt.Fprintln(os.Stderr, "usage: latencyproxy [-delay 20ms] -target URL -addr-file FILE")
		os.Exit(2)
	}
	var count atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(u)
	orig := proxy.Director
	proxy.Director = func(r *http.Request) {
		host := r.Host
		orig(r)
		r.Host = host // keep the signed Host header
	}
	proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.latencyproxy/count":
			fmt.Fprintln(w, count.Load())
			return
		case "/.latencyproxy/reset":
			count.Store(0)
			return
		}
		count.Add(1)
		time.Sleep(*delay)
		proxy.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.Serve(ln, h))
}
