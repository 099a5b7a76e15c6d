package realduck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// server is one scripts/realduck.py --serve process.
type server struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	err lockedBuffer
}

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
	idle   = map[string][]*server{} // by python and runner
)

// serve runs req on an idle server of d, or a new one. A server that
// fails (its process ended, an answer that does not parse) is dropped;
// the error carries what it wrote on standard error.
func (d *DuckDB) serve(req serveRequest) (serveAnswer, error) {
	key := d.Python + "\x00" + d.Runner
	poolMu.Lock()
	var s *server
	if n := len(idle[key]); n > 0 {
		s, idle[key] = idle[key][n-1], idle[key][:n-1]
	}
	poolMu.Unlock()
	if s == nil {
		var err error
		if s, err = d.startServer(); err != nil {
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

// startServer starts scripts/realduck.py --serve for d. It ends when its
// input closes: at close, or when the test binary ends.
func (d *DuckDB) startServer() (*server, error) {
	s := &server{cmd: exec.Command(d.Python, d.Runner, "--serve")}
	s.cmd.Stderr = &s.err
	in, err := s.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("DuckDB %s: start the runner: %w", d.Release, err)
	}
	s.in, s.out = in, bufio.NewReader(out)
	return s, nil
}

// do sends req and reads its answer.
func (s *server) do(req serveRequest) (serveAnswer, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return serveAnswer{}, err
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return serveAnswer{}, err
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("it ended without an answer")
		}
		return serveAnswer{}, err
	}
	var ans serveAnswer
	if err := json.Unmarshal(line, &ans); err != nil {
		return serveAnswer{}, fmt.Errorf("its answer does not parse: %w", err)
	}
	return ans, nil
}

// close ends the server's process.
func (s *server) close() {
	s.in.Close()
	if s.cmd.Wait() != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
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
