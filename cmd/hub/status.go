package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/width"

	"github.com/hubcli/hub/events"
)

// statusEvery is how often the live status line is redrawn while nothing
// else is written: four times a second, so that the elapsed times move.
const statusEvery = 250 * time.Millisecond

// liveStatus is what the status line shows: the run's elapsed time, its
// tokens and cost so far, the model turn and the tool calls still running.
// It is fed every event (observe) and rendered at a time (line). It is not
// safe for concurrent use; textPrinter holds its lock.
type liveStatus struct {
	start   time.Time
	agent   string // from run.started
	started bool   // the agent has said something: a session, a turn

	tokens   int64    // input, output, cache read and write so far
	cost     *float64 // USD so far; nil when unknown
	usage    bool     // a usage event came: cost is known or known to be unknown
	turns    int      // model turns begun (shown), never fewer than usages
	usages   int      // usage events: the turns run.finished counts
	turnOpen bool     // the current turn has not yet reported its usage
	running  []runningTool
}

type runningTool struct {
	id, name string
	since    time.Time
}

func newLiveStatus(start time.Time) *liveStatus { return &liveStatus{start: start} }

// observe updates s with ev, which happened at now.
func (s *liveStatus) observe(ev events.Event, now time.Time) {
	if t := ev.Type(); t != events.TypeRunStarted && t != events.TypeNotice {
		s.started = true
	}
	switch b := ev.Body.(type) {
	case events.RunStarted:
		s.agent = ev.Agent
	case events.TurnStarted:
		// A session's turn: the time shown is the turn's own (tokens and
		// cost stay the session's).
		s.start, s.running = now, nil
	case events.TextDelta, events.Message, events.Reasoning:
		s.beginTurn()
	case events.ToolStarted:
		// A tool call runs after its turn's usage in some CLIs (pi): it
		// begins no turn of its own, but the first turn may begin with it.
		if s.turns == 0 {
			s.beginTurn()
		}
		s.running = append(s.running, runningTool{id: b.CallID, name: b.Name, since: now})
	case events.ToolFinished:
		for i, t := range s.running {
			if t.id == b.CallID {
				s.running = append(s.running[:i], s.running[i+1:]...)
				break
			}
		}
	case events.Usage:
		s.usages++
		s.turns = max(s.turns, s.usages)
		s.turnOpen = false
		s.usage = true
		s.tokens = b.Total.Sum()
		s.cost = b.Total.CostUSD
	}
}

// beginTurn counts a turn at its first text or reasoning event after the
// last turn's usage, so that the turn shown is the one run.finished will
// count (one per usage event).
func (s *liveStatus) beginTurn() {
	if !s.turnOpen {
		s.turns++
		s.turnOpen = true
	}
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// line renders the status at now, the spinner at frame, cut to cols
// columns (0: not cut): "⠋ 12s · 1,234 tokens · $0.0123 · turn 2 ·
// bash 4s", or "⠋ 3s · starting opencode" until the agent's first event
// ("⠋ 1s · starting" before run.started names the agent).
func (s *liveStatus) line(now time.Time, frame, cols int) string {
	parts := []string{string(spinner[frame%len(spinner)]) + " " + clock(now.Sub(s.start))}
	if !s.started {
		// Before run.started too: finding the agent and its version
		// (a node CLI's --version) can take seconds.
		parts = append(parts, strings.TrimSpace("starting "+s.agent))
		return cutColumns(strings.Join(parts, " · "), cols)
	}
	parts = append(parts, thousands(s.tokens)+" tokens")
	switch {
	case s.cost != nil:
		parts = append(parts, fmt.Sprintf("$%.4f", *s.cost))
	case s.usage:
		parts = append(parts, "cost unknown")
	}
	if s.turns > 0 {
		parts = append(parts, "turn "+strconv.Itoa(s.turns))
	}
	if n := len(s.running); n > 0 {
		t := s.running[n-1] // the latest: the one the agent waits on
		tool := oneLine(harmless(t.name), 40) + " " + clock(now.Sub(t.since))
		if n > 1 {
			tool += fmt.Sprintf(" (+%d more)", n-1)
		}
		parts = append(parts, tool)
	}
	return cutColumns(strings.Join(parts, " · "), cols)
}

// clock is d for people, to the second: 4s, 1m05s, 2h03m.
func clock(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// thousands writes n with commas: 1,234,567.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// cutColumns cuts s to fewer than cols terminal columns (a wide East Asian
// character takes two), leaving the last column free so that the cursor
// never wraps to a new line; cols 0 is no cut.
func cutColumns(s string, cols int) string {
	if cols <= 0 {
		return s
	}
	used := 0
	for i, r := range s {
		w := 1
		if k := width.LookupRune(r).Kind(); k == width.EastAsianWide || k == width.EastAsianFullwidth {
			w = 2
		}
		if used+w > cols-1 {
			return s[:i]
		}
		used += w
	}
	return s
}
