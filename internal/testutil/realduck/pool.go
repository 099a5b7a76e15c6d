package realduck

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// A one-shot run of scripts/realduck.py starts Python and imports DuckDB
// (0.1–0.3 s of CPU) for a query of a few milliseconds; Query and Text
// send their runs to a few processes started with --serve instead, each
// run still in a fresh in-memory DuckDB with the caller's environment and
// working directory, as a run of its own would be.

// maxIdle is how many idle servers a release keeps.
const maxIdle = 2

// serveRequest is one run: SQL, whether the rows come back as JSON
// results or as text, and where it runs.
type serveRequest struct {
	SQL  string            `json:"sql"`
	JSON bool              `json:"json"`
	Env  map[string]string `json:"env"`
	Cwd  string            `json:"cwd"`
}

// serveAnswer is a server's answer to one request.
type serveAnswer struct {
	Results []Result `json:"results"`
	Text    string   `json:"text"`
	Error   *string  `json:"error"`
}

var (
	poolMu sync.Mutex
	idle   = map[string][]*runner{} // by python and runner
)

// serve runs req on an idle server of d, or a new one. A server that
// fails (its process ended, an answer that does not parse) is dropped;
// the error carries what it wrote on standard error.
func (d *DuckDB) serve(req serveRequest) (serveAnswer, error) {
	key := d.Python + "\x00" + d.Runner
	poolMu.Lock()
	var s *runner
	if n := len(idle[key]); n > 0 {
		s, idle[key] = idle[key][n-1], idle[key][:n-1]
	}
	poolMu.Unlock()
	if s == nil {
		var err error
		if s, err = d.startRunner("--serve"); err != nil {
			return serveAnswer{}, err
		}
	}
	ans, err := s.do(req)
	if err != nil {
		s.close()
		return ans, fmt.Errorf("DuckDB %s: the runner failed: %v: %s", d.Release, err, strings.TrimSpace(s.err.String()))
	}
	poolMu.Lock()
	if len(idle[key]) < maxIdle {
		idle[key] = append(idle[key], s)
		s = nil
	}
	poolMu.Unlock()
	if s != nil {
		s.close()
	}
	return ans, nil
}

// do sends req to the --serve process and reads its answer.
func (r *runner) do(req serveRequest) (serveAnswer, error) {
	line, err := r.exchange(req)
	if err != nil {
		return serveAnswer{}, err
	}
	var ans serveAnswer
	if err := json.Unmarshal(line, &ans); err != nil {
		return serveAnswer{}, fmt.Errorf("its answer does not parse: %w", err)
	}
	return ans, nil
}

// close ends the process: its input closed, it is waited for.
func (r *runner) close() {
	r.in.Close()
	r.cmd.Wait()
}

// here returns the caller's environment and working directory for a run.
func here() (map[string]string, string) {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	wd, _ := os.Getwd()
	return env, wd
}
