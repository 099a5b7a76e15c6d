// Package term carries the CLI's input and output streams, whether they are
// terminals, and the switches for colour and progress (STYLE.md §6, §8, §9).
// Colour is applied only at print time, through lipgloss.
package term

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/term"
	"github.com/schollz/progressbar/v3"
)

// IO is one set of streams.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY and ErrTTY report whether Out / ErrOut are terminals.
	OutTTY, ErrTTY bool
	// Color enables styling of human output on Out (never on JSON).
	Color bool
	// Quiet turns progress off.
	Quiet bool
	// Verbose sends debug lines to ErrOut.
	Verbose bool
	// Start is when the command began: debug lines give the seconds since
	// (zero: no time is shown).
	Start time.Time
}

// System returns the process's streams. Colour is on when stdout is a
// terminal, NO_COLOR is empty and TERM is not "dumb" (a terminal that
// cannot draw escape sequences, such as Emacs's shell); on a dumb terminal
// progress bars, which redraw the line, are off too.
func System() *IO {
	outTTY := term.IsTerminal(os.Stdout.Fd())
	errTTY := term.IsTerminal(os.Stderr.Fd())
	dumb := os.Getenv("TERM") == "dumb"
	return &IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, OutTTY: outTTY, ErrTTY: errTTY,
		Color: ColorWanted(outTTY, os.Getenv("NO_COLOR"), os.Getenv("TERM")), Quiet: dumb, Verbose: os.Getenv("FDL_DEBUG") == "1",
		Start: time.Now()}
}

// ColorWanted decides colour from whether stdout is a terminal and the
// NO_COLOR and TERM variables (no-color.org: any non-empty NO_COLOR turns it
// off; TERM=dumb cannot draw it).
func ColorWanted(outTTY bool, noColor, termName string) bool {
	return outTTY && noColor == "" && termName != "dumb"
}

// Test returns streams backed by buffers (not terminals, no colour).
func Test() (*IO, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IO{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}, out, errOut
}

// Styles used for human output.
var (
	styleID      = lipgloss.NewStyle().Foreground(lipgloss.Color("3")) // yellow
	styleRef     = lipgloss.NewStyle().Foreground(lipgloss.Color("6")).Bold(true)
	styleDim     = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	styleOK      = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	styleBad     = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	styleHeading = lipgloss.NewStyle().Bold(true)
)

func (t *IO) style(s lipgloss.Style, text string) string {
	if !t.Color {
		return text
	}
	return s.Render(text)
}

// ID styles a version id.
func (t *IO) ID(s string) string { return t.style(styleID, s) }

// Ref styles a ref name.
func (t *IO) Ref(s string) string { return t.style(styleRef, s) }

// Dim styles secondary text.
func (t *IO) Dim(s string) string { return t.style(styleDim, s) }

// OK styles a success word.
func (t *IO) OK(s string) string { return t.style(styleOK, s) }

// Bad styles an error word.
func (t *IO) Bad(s string) string { return t.style(styleBad, s) }

// Heading styles a heading.
func (t *IO) Heading(s string) string { return t.style(styleHeading, s) }

// Printf writes to Out.
func (t *IO) Printf(format string, a ...any) { fmt.Fprintf(t.Out, format, a...) }

// Warnf writes "warning: " and a line to ErrOut (never to Out, so JSON on
// Out stays one document).
func (t *IO) Warnf(format string, a ...any) {
	fmt.Fprintf(t.ErrOut, t.style(styleBad, "warning:")+" "+format+"\n", a...)
}

// Debugf writes a debug line to ErrOut when Verbose is set, with the
// seconds since Start (when set).
func (t *IO) Debugf(format string, a ...any) {
	if !t.Verbose {
		return
	}
	if t.Start.IsZero() {
		fmt.Fprintf(t.ErrOut, "debug: "+format+"\n", a...)
		return
	}
	fmt.Fprintf(t.ErrOut, "debug: %6.3fs "+format+"\n", append([]any{time.Since(t.Start).Seconds()}, a...)...)
}

// Progress draws transfer progress on ErrOut with
// github.com/schollz/progressbar (throttled redraws), only when ErrOut is a
// terminal and progress is not turned off.
type Progress struct {
	io   *IO
	mu   sync.Mutex
	name string
	bar  *progressbar.ProgressBar
	// The rate is fdl's own, not the bar's: bytes since the bar's first
	// update over the time since then, shown once that is at least
	// minRateWindow (the bar's rolling rate of the last updates gave
	// 826 GB/s for a burst that arrived in a microsecond).
	op        string
	start     time.Time
	startDone int64
	desc      string
	now       func() time.Time // time.Now; tests set it
}

// minRateWindow is the least time a rate is measured over.
const minRateWindow = time.Second

// NewProgress returns a progress drawer, or nil when progress is off (JSON,
// --quiet, or stderr is not a terminal). A nil *Progress ignores Update.
func (t *IO) NewProgress(json bool) *Progress {
	if json || t.Quiet || !t.ErrTTY {
		return nil
	}
	return &Progress{io: t}
}

// Update moves the bar for op on name to done bytes of total (total < 0 when
// unknown). A new name starts a new bar.
func (p *Progress) Update(op, name string, done, total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now == nil {
		p.now = time.Now
	}
	now := p.now()
	if p.bar == nil || p.name != name {
		if p.bar != nil {
			p.bar.Finish()
		}
		p.name, p.op, p.start, p.startDone = name, op, now, done
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(p.io.ErrOut),
			progressbar.OptionSetDescription(op+" "+name),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionEnableColorCodes(p.io.Color),
		)
	}
	p.desc = p.op + " " + p.name + " " + progressText(done, total, done-p.startDone, now.Sub(p.start))
	p.bar.Describe(p.desc)
	p.bar.Set64(done)
}

// progressText is "12.0 MiB of 40.0 MiB" (or "12.0 MiB" when total is
// unknown), with ", 35.0 MiB/s" once moved bytes were measured over at
// least minRateWindow.
func progressText(done, total, moved int64, over time.Duration) string {
	s := Bytes(done)
	if total >= 0 {
		s += " of " + Bytes(total)
	}
	if over >= minRateWindow && moved > 0 {
		s += ", " + Bytes(int64(float64(moved)/over.Seconds())) + "/s"
	}
	return s
}

// Done ends the progress display.
func (p *Progress) Done() {
	if p == nil || p.bar == nil {
		return
	}
	p.bar.Finish()
	p.bar = nil
}

// Bytes formats a byte count for people (1.5 MiB); a negative count is an
// unknown size ("unknown size").
func Bytes(n int64) string {
	const unit = 1024
	if n < 0 {
		return "unknown size" // a store that does not tell it (store.AddSize)
	}
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
