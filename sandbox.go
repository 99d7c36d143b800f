package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/sandbox"
)

// DiffCap is how much of a sandboxed run's diff run.finished.diff holds:
// 256 KiB, cut at a line's end (run.finished.diff_bytes is the whole
// size; WithDiff gets all of it).
const DiffCap = 256 << 10

// maxNamed is how many paths an error message names.
const maxNamed = 20

// sandboxOutcome is what the sandbox step adds to a run's record.
type sandboxOutcome struct {
	Diff      *string
	DiffBytes *int64
	Applied   *bool
	// Err fails the run: protected_path whatever else happened; a
	// conflict, a refused approval or hub's own failure only a run that
	// was ok.
	Err *events.Error
}

// checkSandboxRequest refuses the sandbox fields of a request that has no
// sandbox, and a bad mode or glob.
func checkSandboxRequest(req Request) error {
	mode, err := sandbox.ParseMode(string(req.Sandbox))
	if err != nil {
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "use --sandbox copy or --sandbox worktree", "%v", err)
	}
	if mode == sandbox.None {
		var set []string
		if len(req.Protect) > 0 {
			set = append(set, "--protect")
		}
		if req.Apply {
			set = append(set, "--apply")
		}
		if req.KeepSandbox {
			set = append(set, "--keep-sandbox")
		}
		if len(set) > 0 {
			return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "add --sandbox copy or --sandbox worktree",
				"%s only make sense with a sandbox", strings.Join(set, " and "))
		}
		return nil
	}
	if err := sandbox.CheckProtect(req.Protect); err != nil {
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "give --protect a glob such as 'secrets/**' or '*.pem'", "%v", err)
	}
	return nil
}

// openSandbox makes the run's sandbox of its working directory (SPEC
// §6.3), within the run's wall-clock limit, and moves the run into it: from
// here on r.req.Cwd is the agent's directory in the sandbox. It returns
// the error (and what stopped it, if anything) when no sandbox could be
// made; nothing is then left of it.
func (r *runner) openSandbox(ctx context.Context) (err, cause error) {
	mode, _ := sandbox.ParseMode(string(r.req.Sandbox))
	if mode == sandbox.None {
		return nil, nil
	}
	sctx := ctx
	if t := r.req.Limits.Timeout; t > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadlineCause(ctx, r.began.Add(t), ErrWallTimeout)
		defer cancel()
	}
	sb, err := sandbox.Open(sctx, r.cwd(), sandbox.Options{Mode: mode, Protect: r.req.Protect, TempDir: r.opt.tempDir})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return events.NewError(events.BinCancelled, events.ReasonCaller, "nothing to do if you meant to stop it; run again to retry",
			"cancelled while hub made the sandbox"), context.Cause(ctx)
	case errors.Is(context.Cause(sctx), ErrWallTimeout):
		return events.NewError(events.BinTimeout, events.ReasonWall, "raise --timeout, or sandbox a smaller tree",
			"making the sandbox took all of --timeout %s", r.req.Limits.Timeout), ErrWallTimeout
	case errors.Is(err, sandbox.ErrNotRepository):
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "use --sandbox copy, or run in a git repository that has a commit", "%v", err), nil
	case errors.Is(err, sandbox.ErrNoGit):
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "install git, or use --sandbox copy", "%v", err), nil
	default:
		return events.NewError(events.BinInternal, "", "check that the temporary directory (TMPDIR) has room and the tree is readable",
			"cannot make the sandbox: %v", err), nil
	}
	r.sb = sb
	r.req.Cwd = sb.Workdir
	return nil, nil
}

// sandboxEvent is run.started's sandbox object, nil without a sandbox.
func (r *runner) sandboxEvent() *events.Sandbox {
	if r.sb == nil {
		return nil
	}
	return &events.Sandbox{Mode: string(r.sb.Mode), Root: r.sb.Root, Dir: r.sb.Dir}
}

// settle ends a sandboxed run once its agent is gone: it reads the change,
// emits a file.changed per path, hands the whole diff to WithDiff, refuses
// protected paths, applies the change when Request.Apply asks and the run
// was ok (after WithApprove), and removes the sandbox (or keeps it:
// KeepSandbox, or when it cannot be removed, with a sandbox_kept notice).
// The change is read even when the run failed or was cancelled: it is what
// the agent did, to review.
func (r *runner) settle(ctx context.Context, rec record) record {
	sb := r.sb
	if sb == nil {
		return rec
	}
	defer r.closeSandbox(true)
	out := &sandboxOutcome{}
	rec.Sandbox = out
	if r.req.Apply {
		no := false
		out.Applied = &no
	}
	res, err := sb.Changes(context.WithoutCancel(ctx))
	switch {
	case err == nil:
	case errors.Is(err, sandbox.ErrChangeTooLarge):
		out.Err = events.NewError(events.BinPermissionDenied, events.ReasonProtectedPath,
			"have the agent make smaller changes (or keep generated files out of the tree, or in paths git ignores); --keep-sandbox keeps the sandbox to look at",
			"nothing was applied: %v", err)
		return rec
	case errors.Is(err, sandbox.ErrReplaced), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.ELOOP):
		// The agent's doing: it moved its sandbox away, or left parts of
		// it that cannot be read.
		out.Err = events.NewError(events.BinPermissionDenied, events.ReasonProtectedPath,
			"run again, and have the agent leave its working directory readable where it is; --keep-sandbox keeps the sandbox to look at",
			"the agent left its sandbox so that hub cannot read its change, so nothing was applied: %v", err)
		return rec
	default:
		out.Err = events.NewError(events.BinInternal, "", "the agent may have left its sandbox in a state hub cannot read (--keep-sandbox keeps it to look at); if it did not, report it as a hub bug",
			"cannot read the sandbox's change, so nothing was applied: %v", err)
		return rec
	}
	files := make([]events.FileChanged, 0, len(res.Files))
	for _, f := range res.Files {
		ev := events.FileChanged{Path: f.Path, Change: events.Change(f.Kind), Binary: f.Binary, Protected: f.Protected}
		if f.OldPath != "" {
			old := f.OldPath
			ev.OldPath = &old
		}
		if f.Kind != sandbox.Deleted {
			n := f.Bytes
			ev.Bytes = &n
		}
		files = append(files, ev)
		r.s.emit(ev)
	}
	cut := sandbox.Cut(res.Diff, DiffCap)
	size := int64(len(res.Diff))
	out.Diff, out.DiffBytes = &cut, &size
	if r.opt.diffOut != nil {
		r.opt.diffOut(res.Diff)
	}
	if prot := res.Protected(); len(prot) > 0 {
		// The paths grouped by why, each reason said once.
		var whys []string
		byWhy := map[string][]string{}
		for i, f := range prot {
			if i == maxNamed {
				break
			}
			if byWhy[f.Protected] == nil {
				whys = append(whys, f.Protected)
			}
			byWhy[f.Protected] = append(byWhy[f.Protected], f.Path)
		}
		named := make([]string, 0, len(whys)+1)
		for _, why := range whys {
			named = append(named, strings.Join(byWhy[why], ", ")+" ("+why+")")
		}
		if len(prot) > maxNamed {
			named = append(named, fmt.Sprintf("and %d more", len(prot)-maxNamed))
		}
		out.Err = events.NewError(events.BinPermissionDenied, events.ReasonProtectedPath,
			"tell the agent to leave these paths alone, or drop the --protect glob that covers them; the rest of the change is in the diff (--diff-out FILE) to review",
			"the agent changed %d protected path(s), so nothing was applied: %s", len(prot), strings.Join(named, "; "))
		return rec
	}
	if !r.req.Apply || len(res.Diff) == 0 {
		return rec
	}
	if v, _ := decide(r.totals(rec)); !v.OK {
		return rec // a failed run applies nothing; its error stands
	}
	if r.opt.approve != nil {
		if err := r.opt.approve(ctx, res.Diff, files); err != nil {
			var e *events.Error
			switch {
			case ctx.Err() != nil:
				e = events.NewError(events.BinCancelled, events.ReasonCaller, "nothing to do if you meant to stop it; the change is in --diff-out FILE to apply later with `hub apply`",
					"cancelled while hub asked to approve the change; nothing was applied")
			case errors.As(err, &e):
			default:
				e = events.NewError(events.BinPermissionDenied, events.ReasonConfirmationRequired,
					"save the change with --diff-out FILE and apply it later with `hub apply FILE`, or run again and approve it",
					"the change was not approved, so nothing was applied: %v", err)
			}
			out.Err = e
			return rec
		}
	}
	if ctx.Err() != nil {
		out.Err = events.NewError(events.BinCancelled, events.ReasonCaller, "nothing to do if you meant to stop it; run again to retry",
			"cancelled before the change was applied; nothing was applied")
		return rec
	}
	_, err = sandbox.Apply(ctx, sb.Root, res.Diff, sandbox.ApplyOptions{Protect: r.req.Protect})
	var ce *sandbox.ConflictError
	var pe *sandbox.ProtectedError
	switch {
	case err == nil:
		yes := true
		out.Applied = &yes
	case errors.As(err, &ce):
		out.Err = events.NewError(events.BinInvalidInput, events.ReasonConflict,
			"the original changed while the agent ran: the whole change is in run.finished.diff (and in --diff-out FILE when given); settle those paths, then apply it with `hub apply FILE`, or run again",
			"nothing was applied: %s", strings.Join(first(ce.Paths, maxNamed), "; "))
	case errors.As(err, &pe):
		out.Err = events.NewError(events.BinPermissionDenied, events.ReasonProtectedPath,
			"tell the agent to leave these paths alone", "nothing was applied: %s", strings.Join(first(pe.Paths, maxNamed), "; "))
	default:
		out.Err = events.NewError(events.BinInternal, "", "check the original tree's permissions and free space; the change is in --diff-out FILE to apply later",
			"applying the change failed, and nothing was applied: %v", err)
	}
	return rec
}

// first returns at most n of list, the last one saying how many more.
func first(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("and %d more", len(list)-n))
}

// closeSandbox removes the run's sandbox, or keeps it (Request.KeepSandbox,
// or when it cannot be removed), saying where with a sandbox_kept notice
// when notice is set. It is safe to call twice.
func (r *runner) closeSandbox(notice bool) {
	sb := r.sb
	if sb == nil {
		return
	}
	r.sb = nil
	msg := ""
	if r.req.KeepSandbox {
		_ = sb.Keep() // not swept by a later run
		msg = "the sandbox is kept at " + sb.Dir + " (--keep-sandbox); remove it when done"
		if sb.Mode == sandbox.Worktree {
			msg += " with `git worktree remove --force " + sb.Dir + "`"
		}
	} else if err := sb.Remove(); err != nil {
		msg = fmt.Sprintf("hub could not remove the sandbox at %s: %v; remove it by hand", sb.Dir, err)
	}
	if msg != "" && notice {
		data, _ := json.Marshal(map[string]string{"dir": sb.Dir})
		r.s.emit(events.Notice{Kind: events.NoticeSandboxKept, Message: msg, Data: data})
	}
}
