package hub

import "github.com/hubcli/hub/internal/proc"

// BecomeSubreaper makes the calling process a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER, Linux): processes that an agent's tools
// orphan are re-parented to it instead of to init once the run's guard is
// gone, so that runs with WithOrphans find, kill and reap them. It affects the whole
// process and cannot be undone; call it once, before starting runs. The
// error is prctl's (EINVAL on kernels before 3.4).
func BecomeSubreaper() error { return proc.BecomeSubreaper() }

// ReapOrphans SIGKILLs and reaps every child of the calling process that is
// not the guard of a run under way, and their descendants (for up to 2 s):
// for a child subreaper that starts no child processes but hub's runs (the
// hub CLI), before it exits, so that what escaped a guard — a version
// command that SIGKILLed its guard, which no run sweeps — does not outlive
// it.
func ReapOrphans() { proc.SweepOrphans() }
