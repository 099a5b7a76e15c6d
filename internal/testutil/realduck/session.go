package realduck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Session is one long-lived real DuckDB process with one connection (a
// notebook or a pipeline that stays up). Starting Python and loading the
// extensions costs a few tenths of a second; a test that writes a catalog
// many times sends each write to one session instead. It is safe for use
// by several goroutines (requests are served one at a time).
type Session struct {
	d  *DuckDB
	mu sync.Mutex
	*runner
}

// runner is one scripts/realduck.py process that answers requests, one
// JSON line in, one JSON line out (--session or --serve).
type runner struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	err lockedBuffer // the process's standard error
}

// startRunner starts scripts/realduck.py with mode ("--session" or
// "--serve"). It ends when its input closes.
func (d *DuckDB) startRunner(mode string) (*runner, error) {
	r := &runner{cmd: exec.Command(d.Python, d.Runner, mode)}
	r.cmd.Stderr = &r.err
	in, err := r.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("DuckDB %s: start %s %s: %w", d.Release, d.Runner, mode, err)
	}
	r.in, r.out = in, bufio.NewReader(out)
	return r, nil
}

// exchange sends req as one JSON line and returns the answer's line.
func (r *runner) exchange(req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	line, err := r.out.ReadBytes('\n')
	if errors.Is(err, io.EOF) {
		err = errors.New("it ended without an answer")
	}
	return line, err
}

// lockedBuffer is a strings.Builder that the process's stderr copier and
// Query's error messages may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts a session of d (scripts/realduck.py --session). It ends
// when t ends.
func (d *DuckDB) Start(t testing.TB) *Session {
	t.Helper()
	s, err := d.Launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Launch starts a session of d that lives until Close, or until the test
// binary ends (its input closes then): one session a package's tests share.
func (d *DuckDB) Launch() (*Session, error) {
	r, err := d.startRunner("--session")
	if err != nil {
		return nil, err
	}
	return &Session{d: d, runner: r}, nil
}

// Query runs sql (one or more statements, in order) in the session and
// returns the results of the statements that return rows, as
// DuckDB.Query does. An error names the failing statement.
func (s *Session) Query(sql string) ([]Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.in == nil {
		return nil, fmt.Errorf("DuckDB %s session: closed", s.d.Release)
	}
	line, err := s.exchange(sql)
	if err != nil {
		return nil, fmt.Errorf("DuckDB %s session: %v %s", s.d.Release, err, s.err.String())
	}
	var ans struct {
		Results []Result `json:"results"`
		Error   string   `json:"error"`
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		return nil, fmt.Errorf("DuckDB %s session: %q: %v", s.d.Release, line, err)
	}
	if ans.Error != "" {
		return nil, fmt.Errorf("DuckDB %s: %s", s.d.Release, ans.Error)
	}
	return ans.Results, nil
}

// MustQuery is Query that fails t on error.
func (s *Session) MustQuery(t testing.TB, sql string) []Result {
	t.Helper()
	res, err := s.Query(sql)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Close ends the session (its input closed, the process waited for).
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.in == nil {
		return nil
	}
	s.in.Close()
	s.in = nil
	return s.cmd.Wait()
}

// OnLake returns sql wrapped so that it runs on a working catalog as a
// pipeline's script does: attach is the ATTACH statement fdl printed for
// the catalog (checkout's line, naming it lake), lake is made the default
// database for sql, and it is detached afterwards, so that the catalog is
// free for fdl again (DuckDB keeps a DuckDB catalog file locked while it
// is attached). Data inlining is off (every insert writes a Parquet file,
// as tests that count data files expect) unless inline is true, which
// keeps the extension's default (up to 10 rows inlined in the catalog);
// sql may change it for one statement with SET
// ducklake_default_data_inlining_row_limit, which the extension reads at
// each insert.
func OnLake(attach, sql string, inline bool) string {
	var b strings.Builder
	// A write that failed half way in a session may have left lake attached.
	b.WriteString("USE memory;\nDETACH DATABASE IF EXISTS lake;\n")
	if !inline {
		b.WriteString("SET ducklake_default_data_inlining_row_limit = 0;\n")
	} else {
		b.WriteString("RESET ducklake_default_data_inlining_row_limit;\n")
	}
	b.WriteString(strings.TrimSpace(attach))
	if !strings.HasSuffix(b.String(), ";") {
		b.WriteString(";")
	}
	b.WriteString("\nUSE lake;\n")
	b.WriteString(strings.TrimSpace(sql))
	if !strings.HasSuffix(strings.TrimSpace(sql), ";") {
		b.WriteString(";")
	}
	b.WriteString("\nUSE memory;\nDETACH lake;\n")
	return b.String()
}
