package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/statusfile"
)

// defaultMaxParallel is hub batch's --max-parallel: runs mostly wait on
// their model, so more than the cores; each is a CLI process of 100 MB or
// more.
const defaultMaxParallel = 4

// maxBatchLine bounds one request line of hub batch's FILE: 16 MiB, a
// prompt's cap and room for the rest.
const maxBatchLine = MaxPromptBytes + 1<<20

const batchDescription = `FILE holds one request per line, a JSON object whose keys are hub run's flags
(the same names and values; "_" may stand for "-") plus "id" (required, unique) and "prompt"
(or "prompt-file"): {"id":"a1","agent":"codex","prompt":"fix the test","timeout":"10m"}.
The flags given to hub batch are every request's defaults; the config file applies as for hub run.
Up to --max-parallel requests run at once, in input order. stdout carries every run's events as
hub.event/v1 JSONL, each with the request's "id", then one summary line per request, in input order:
{"type":"batch.summary","id","line","run_id","ok","bin","reason","message","cost_usd","duration_ms","exit_code"}.
A line that is not a valid request is reported (a summary with bin "usage", exit code 2, and on
stderr with its line number) and the others still run. "status-file" per request keeps its state.
--output text prints a line per request as it ends and, on a terminal, a live line per running request.
Ctrl-C (or SIGTERM) stops every run; each still writes its run.finished.
Exit status: 0 when every request is ok, else the exit code of the first failure in input order.`

// batchRequest is one line of hub batch's FILE once read: its plan, or
// why it is no request.
type batchRequest struct {
	line int
	id   string
	plan runPlan
	err  error // a usage error of the line: it does not run
}

// batchSummary is one request's summary line (see batchDescription).
type batchSummary struct {
	Type       string   `json:"type"`
	ID         string   `json:"id"`
	Line       int      `json:"line"`
	RunID      string   `json:"run_id,omitempty"`
	OK         bool     `json:"ok"`
	Bin        string   `json:"bin,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Message    string   `json:"message,omitempty"`
	CostUSD    *float64 `json:"cost_usd"`
	DurationMS int64    `json:"duration_ms"`
	ExitCode   int      `json:"exit_code"`
}

func batchCommand(kill <-chan struct{}) *cli.Command {
	return &cli.Command{
		Name:            "batch",
		Usage:           "run many requests from a JSONL file, a bounded number at once",
		ArgsUsage:       "FILE (or - for stdin)",
		Description:     batchDescription,
		Flags:           append(runFlags(), &cli.IntFlag{Name: "max-parallel", Value: defaultMaxParallel, Usage: "requests run at once (at least 1)", EnvVars: []string{"HUB_MAX_PARALLEL"}}),
		HideHelpCommand: true,
		OnUsageError:    usageErr,
		Action:          batchAction(kill),
	}
}

func batchAction(kill <-chan struct{}) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() != 1 {
			return usagef("batch: give one FILE of requests (or - for stdin), got %q", c.Args().Slice())
		}
		n := c.Int("max-parallel")
		if n < 1 {
			return usagef("batch: --max-parallel must be at least 1")
		}
		// The batch's own output: JSONL unless --output text is given.
		output := "jsonl"
		if c.IsSet("output") {
			output = c.String("output")
		}
		if output != "jsonl" && output != "text" {
			return usagef("batch: --output must be jsonl (every run's events, then the summaries) or text (a line per request as it ends), not %q", output)
		}
		if err := checkColor(c.String("color")); err != nil {
			return err
		}
		name := c.Args().First()
		var in io.Reader = c.App.Reader
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return usagef("batch: %v", err)
			}
			defer f.Close()
			in = f
		}
		defaults := batchDefaults(commandTail(c))
		reqs, err := readBatch(c.Context, in, defaults)
		if err != nil {
			return usagef("batch: %s: %v", name, err)
		}
		for _, r := range reqs {
			if r.err != nil {
				fmt.Fprintf(c.App.ErrWriter, "hub: batch %s:%d: %v\n", name, r.line, r.err)
			}
		}
		var board *batchBoard
		if output == "text" {
			board = newBatchBoard(c.App.Writer, c.App.ErrWriter, newConsole(c.App.Writer, c.App.ErrWriter, c.String("color"), os.Getenv))
		}
		return runBatch(c.Context, reqs, n, kill, board, c.App.Writer, c.App.ErrWriter)
	}
}

// batchDefaults are the words of hub batch's own command line that are
// run flags (the defaults of every request), FILE and --max-parallel left
// out.
func batchDefaults(tail []string) []string {
	var out []string
	for i := 0; i < len(tail); i++ {
		w := tail[i]
		if w == "--" || !strings.HasPrefix(w, "-") || w == "-" {
			break
		}
		name, _, inline := strings.Cut(strings.TrimLeft(w, "-"), "=")
		takes, _ := runFlagTakesValue(name)
		if name == "max-parallel" {
			if !inline {
				i++
			}
			continue
		}
		out = append(out, w)
		if takes && !inline && i+1 < len(tail) {
			i++
			out = append(out, tail[i])
		}
	}
	return out
}

// readBatch reads the requests of in, one a line (blank lines skipped),
// each planned as hub run plans its flags, defaults first. A line that is
// no request is kept with its error; an error reading in is the batch's.
func readBatch(ctx context.Context, in io.Reader, defaults []string) ([]batchRequest, error) {
	br := bufio.NewReaderSize(in, 1<<20)
	var reqs []batchRequest
	ids := map[string]int{}
	for line := 1; ; line++ {
		b, err := readLine(br, maxBatchLine)
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, errLineTooLong) {
				reqs = append(reqs, batchRequest{line: line, id: fmt.Sprintf("line-%d", line), err: err})
				continue
			}
			return nil, err
		}
		if len(bytes.TrimSpace(b)) > 0 {
			r := planLine(ctx, line, b, defaults)
			if prev, dup := ids[r.id]; dup && r.err == nil && r.id != "" {
				r.err = usagef("id %q is the id of line %d too: ids must be unique", r.id, prev)
			}
			if r.err == nil {
				ids[r.id] = line
			}
			reqs = append(reqs, r)
		}
		if errors.Is(err, io.EOF) {
			return reqs, nil
		}
	}
}

var errLineTooLong = fmt.Errorf("line longer than %d bytes", maxBatchLine)

// readLine reads one line of at most max bytes (without its newline); a
// longer one is skipped to its end and is errLineTooLong.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(b)+len(chunk) <= max+1 {
			b = append(b, chunk...)
		} else if b != nil || len(chunk) > 0 {
			b = nil
			// Skip to the line's end.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return b, err
		}
		return bytes.TrimSuffix(b, []byte("\n")), nil
	}
}

// planLine turns one request line into hub run's arguments and plans them
// as hub run does (flags, HUB_* variables, the config file).
func planLine(ctx context.Context, line int, b []byte, defaults []string) batchRequest {
	r := batchRequest{line: line, id: fmt.Sprintf("line-%d", line)}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&obj); err != nil || dec.More() {
		r.err = usagef("not one JSON object: %v", orNoErr(err, "more after it"))
		return r
	}
	id, ok := obj["id"]
	if !ok || json.Unmarshal(id, &r.id) != nil || strings.TrimSpace(r.id) == "" {
		if !ok {
			r.err = usagef(`no "id": give each request a unique string id`)
		} else {
			r.err = usagef(`"id" must be a non-empty string`)
		}
		return r
	}
	args := append([]string(nil), defaults...)
	var prompt *string
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := strings.ReplaceAll(k, "_", "-")
		v := obj[k]
		switch name {
		case "id":
			continue
		case "prompt":
			var s string
			if json.Unmarshal(v, &s) != nil {
				r.err = usagef(`"prompt" must be a string`)
				return r
			}
			prompt = &s
			continue
		case "max-parallel", "output", "color":
			r.err = usagef(`%q is hub batch's own flag, not a request's`, name)
			return r
		}
		if _, known := runFlagTakesValue(name); !known {
			r.err = usagef("%q is not a hub run flag", k)
			return r
		}
		texts, err := flagTexts(v)
		if err != nil {
			r.err = usagef("%q: %v", k, err)
			return r
		}
		for _, t := range texts {
			args = append(args, "--"+name+"="+t)
		}
	}
	if prompt != nil {
		args = append(args, "--", *prompt)
	}
	p, err := planArgs(ctx, args)
	switch {
	case err != nil:
		r.err = err
	case p.prompt == promptStdin:
		r.err = usagef(`a request's prompt is its "prompt" or "prompt-file", not stdin`)
	case p.approval.confirm:
		r.err = usagef(`"confirm" asks on the terminal, which the batch's runs share: approve ahead with "yes"`)
	case p.session:
		r.err = usagef(`"session-in" runs a session of many turns, which is hub run's: a request is one run`)
	}
	r.plan = p
	return r
}

func orNoErr(err error, s string) any {
	if err != nil {
		return err
	}
	return s
}

// flagTexts is a request value as its flag's words: a string as it is, a
// number or bool as JSON writes it, an array (a repeatable flag) a word
// per element.
func flagTexts(v json.RawMessage) ([]string, error) {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return nil, err
	}
	one := func(x any) (string, error) {
		switch t := x.(type) {
		case string:
			return t, nil
		case bool, float64:
			b, _ := json.Marshal(t)
			return string(b), nil
		}
		return "", fmt.Errorf("want a string, number or bool, got %s", string(v))
	}
	if arr, ok := x.([]any); ok {
		out := make([]string, 0, len(arr))
		for _, e := range arr {
			s, err := one(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := one(x)
	return []string{s}, err
}

// planArgs plans args as `hub run ARGS` would: its flags (and their HUB_*
// variables), the config file, plan. It runs nothing. Not safe for
// concurrent use (urfave/cli's flag state).
func planArgs(ctx context.Context, args []string) (runPlan, error) {
	var p runPlan
	app := &cli.App{
		Name: "hub", Writer: io.Discard, ErrWriter: io.Discard, Reader: strings.NewReader(""),
		ExitErrHandler:            func(*cli.Context, error) {},
		DisableSliceFlagSeparator: true,
		OnUsageError:              usageErr,
		Commands: []*cli.Command{{Name: "run", Flags: runFlags(), OnUsageError: usageErr, HideHelp: true,
			Action: func(c *cli.Context) error {
				o, err := configuredRunOptions(c)
				if err != nil {
					return err
				}
				p, err = o.plan()
				return err
			}}},
	}
	if err := app.RunContext(ctx, append([]string{"hub", "run"}, args...)); err != nil {
		var ue usageError
		if !errors.As(err, &ue) {
			err = usagef("%v", err)
		}
		return runPlan{}, usageError{strings.TrimPrefix(err.Error(), "run: ")}
	}
	return p, nil
}

// runBatch runs reqs, at most n at once, in input order, and writes their
// events (each with its request's id) and then their summaries on stdout.
// Every request gets a run.finished, Ctrl-C or not: a cancelled context
// ends a run that has not started before anything of it starts.
//
// With a board (--output text) the events are not written: the board
// shows the runs going and a line per request as it ends, then a count.
func runBatch(ctx context.Context, reqs []batchRequest, n int, kill <-chan struct{}, board *batchBoard, stdout, stderr io.Writer) error {
	out := &lockedWriter{w: stdout}
	if board != nil {
		board.out = out
		defer board.close()
	}
	sums := make([]batchSummary, len(reqs))
	var orphans bool
	if err := hub.BecomeSubreaper(); err == nil {
		orphans = true
		defer hub.ReapOrphans()
	}
	g := new(errgroup.Group)
	g.SetLimit(n)
	for i := range reqs {
		r := &reqs[i]
		sums[i] = batchSummary{Type: "batch.summary", ID: r.id, Line: r.line}
		if r.err != nil {
			sums[i].Bin, sums[i].Message, sums[i].ExitCode = "usage", r.err.Error(), exitUsage
			if board != nil {
				board.finished(sums[i], "")
			}
			continue
		}
		g.Go(func() error {
			sums[i] = runBatchRequest(ctx, r, kill, orphans, board, out, stderr)
			return nil
		})
	}
	_ = g.Wait()
	enc := json.NewEncoder(out)
	code, ok := 0, 0
	for _, s := range sums {
		if board == nil {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		if code == 0 && s.ExitCode != 0 {
			code = s.ExitCode
		}
		if s.OK {
			ok++
		}
	}
	if board != nil {
		board.close()
		fmt.Fprintf(out, "batch: %d of %d ok\n", ok, len(sums))
	}
	if out.err != nil {
		return out.err
	}
	if code != 0 {
		return statusError{code}
	}
	return nil
}

// runBatchRequest runs one request of a batch, its events on out with its
// id, and returns its summary.
func runBatchRequest(ctx context.Context, r *batchRequest, kill <-chan struct{}, orphans bool, board *batchBoard, out *lockedWriter, stderr io.Writer) (s batchSummary) {
	s = batchSummary{Type: "batch.summary", ID: r.id, Line: r.line}
	p := r.plan
	if board != nil {
		defer func() { board.finished(s, p.req.Agent) }()
	}
	if err := p.load(ctx, strings.NewReader("")); err != nil {
		var stop stopBeforeStart
		if !errors.As(err, &stop) {
			msg := strings.TrimPrefix(err.Error(), "run: ")
			s.Bin, s.Message, s.ExitCode = "usage", msg, exitUsage
			fmt.Fprintf(stderr, "hub: batch line %d (%s): %s\n", r.line, r.id, msg)
			return s
		}
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		cancel(stop.cause)
	}
	if p.statusFile != "" {
		p.status = statusfile.New(p.statusFile, r.id) // load wrote its first state without the id
	}
	idField, _ := json.Marshal(r.id)
	var buf []byte
	sink := func(ev events.Event) error {
		s.RunID = ev.RunID
		if p.status != nil {
			_ = p.status.Observe(ev)
		}
		if board != nil {
			board.observe(r.id, ev)
			return nil
		}
		var err error
		if buf, err = ev.AppendJSON(buf[:0]); err != nil {
			return err
		}
		// {"id":…, then the event's own fields.
		line := append(append(append([]byte(`{"id":`), idField...), ','), buf[1:]...)
		return out.writeLine(line)
	}
	opts := []hub.Option{hub.WithKill(kill)}
	if orphans {
		opts = append(opts, hub.WithOrphans())
	}
	fo := p.fileOptions()
	defer fo.close()
	opts = append(opts, fo.opts...)
	fin := hub.Run(ctx, p.req, sink, opts...)
	fo.report(stderr)
	s.OK, s.CostUSD, s.DurationMS = fin.OK, fin.CostUSD, fin.DurationMS
	if e := fin.Error; e != nil {
		s.Bin, s.Reason, s.Message, s.ExitCode = string(e.Bin), string(e.Reason), e.Message, e.Bin.ExitCode()
	}
	return s
}

// lockedWriter writes whole lines from several runs, one at a time, and
// remembers its first error.
type lockedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if err != nil && l.err == nil {
		l.err = err
	}
	return n, err
}

func (l *lockedWriter) writeLine(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	b = append(b, '\n')
	if _, err := l.w.Write(b); err != nil {
		l.err = err
	}
	return l.err
}
