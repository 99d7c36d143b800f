package hub

import (
	"context"
	"io"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
)

// Option sets one of the runner's own knobs for Run, Events or Replay: how
// the run is carried out, not what the task is (that is Request).
type Option func(*options)

// options are a run's knobs; the zero value is the default.
type options struct {
	runID    string
	clock    func() time.Time
	kill     <-chan struct{}
	orphans  bool // the caller is a child subreaper (see WithOrphans)
	rawLog   io.Writer
	guards   []Guard
	confirm  Confirm
	approve  Approve
	approver Approver // tool calls (WithApprover)
	diffOut  func([]byte)
	tempDir  string
	flush    func() error

	session        *Session // NewSession's: the run is a live session
	sessionIdle    time.Duration
	sessionIdleSet bool
	turnTimeout    time.Duration
	// A session held by resuming: the decoder of its last turn's run, for
	// the next run's to go on from (normalize.Continuer: Codex reports a
	// resumed session's running total), and where a run leaves its own.
	prevDec normalize.Decoder
	lastDec *normalize.Decoder
}

func newOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if o.clock == nil {
		o.clock = events.Now
	}
	if o.runID == "" {
		o.runID = newRunID()
	}
	return o
}

// WithRunID names the run in every event; without it the run gets a random
// id ("run_" and 16 hex digits).
func WithRunID(id string) Option { return func(o *options) { o.runID = id } }

// WithClock stamps events (ts, and duration_ms) with now instead of
// events.Now; tests inject a fixed clock for golden output. The wall-clock
// and idle limits always use the real monotonic clock.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithKill gives a channel that, when closed, SIGKILLs the agent's process
// group and every descendant at once, without the grace period (for a
// second Ctrl-C). The run ends as cancelled/caller.
func WithKill(kill <-chan struct{}) Option { return func(o *options) { o.kill = kill } }

// WithOrphans says the caller is a child subreaper (see BecomeSubreaper)
// that starts no child processes but hub's runs (the hub CLI). Every run
// holds its agent's whole tree without it (see Run); this covers the one
// way out, an agent that SIGKILLs its guard: the tree's orphans are then
// re-parented to the caller, and the run SIGKILLs and reaps every child of
// the caller that is not another run's guard. Safe with concurrent runs.
func WithOrphans() Option {
	return func(o *options) { o.orphans = true }
}

// WithRawLog copies the agent's stdout, byte for byte, to w. After w's first
// write error it receives nothing more and the run goes on; wrap w to learn
// of the error. The copy holds credentials as the agent wrote them: create
// the file mode 0600.
func WithRawLog(w io.Writer) Option { return func(o *options) { o.rawLog = w } }

// WithGuard adds a guard that sees every event of the agent's after hub's
// own guards (see Guard) and may stop the run with its error. A guard that
// keeps state must be new for each run.
func WithGuard(g Guard) Option { return func(o *options) { o.guards = append(o.guards, g) } }

// Confirm approves a run's grant before anything starts (the CLI's
// --confirm): g is how the agent will be held to req.Permission. A non-nil
// error refuses the run (run.finished carries it; an *events.Error keeps
// its bin, any other error is permission_denied/confirmation_required). It
// is called once per run, after the grant is known and before the agent's
// version is probed; ctx is the run's.
type Confirm func(ctx context.Context, req Request, g grant.Rule) error

// WithConfirm has every run approved by c before anything starts.
func WithConfirm(c Confirm) Option { return func(o *options) { o.confirm = c } }

// Approve approves a sandboxed run's change before Request.Apply applies it
// (the CLI's --confirm): diff is the whole change (git-style), files its
// paths. A non-nil error leaves the original as it was and fails the run
// (an *events.Error keeps its bin, any other error is
// permission_denied/confirmation_required). It is called at most once per
// run, after the agent exited and only when there is a change to apply;
// ctx is the run's.
type Approve func(ctx context.Context, diff []byte, files []events.FileChanged) error

// WithApprove has every change Request.Apply would apply approved by a
// first.
func WithApprove(a Approve) Option { return func(o *options) { o.approve = a } }

// WithDiff hands a sandboxed run's whole change (the git-style diff that
// run.finished.diff is cut from, "" when none) to f once the agent exited,
// before anything is applied; f is not called when the change could not be
// read. The CLI's --diff-out writes it to a file. The diff is not redacted:
// it is the change itself, credentials the agent wrote into files included.
func WithDiff(f func(diff []byte)) Option { return func(o *options) { o.diffOut = f } }

// WithFlush has Run call flush whenever it is about to wait for the agent:
// before each read of its stdout, after each write to its stderr (whose
// lines are notices) has been handled, and before it waits for the agent to
// exit. A Sink that writes events to a buffer can write them out then, in
// batches, and a consumer still sees each event before hub waits for the
// next one. flush is called as the Sink is, from one goroutine at a time;
// a non-nil error from it is the Sink's error (see Sink). The events of the
// run's end (its last notices, run.finished) come after the last call: the
// caller writes them out once Run returns.
func WithFlush(flush func() error) Option { return func(o *options) { o.flush = flush } }

// WithTempDir makes a sandboxed run's sandbox in dir instead of
// os.TempDir() ($TMPDIR): a file system with reflinks (btrfs, XFS) makes
// --sandbox copy nearly free.
func WithTempDir(dir string) Option { return func(o *options) { o.tempDir = dir } }
