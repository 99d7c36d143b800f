package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/sandbox"
)

// applyCommand is `hub apply [--cwd DIR] FILE` (SPEC §6.3): a saved
// sandbox diff (--diff-out) applied later with the checks --apply makes.
func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "apply a saved sandbox diff (--diff-out) to a tree, with the checks --apply makes",
		ArgsUsage: "FILE   (a git-style diff; - reads it from stdin)",
		Description: "Applies all or nothing: every path the diff touches must be as the diff expects (its blob id on the index line,\n" +
			"else its hunks apply exactly) and a path it adds must not exist, else nothing is written and hub exits 5\n" +
			"(invalid_input/conflict); a .git path, a --protect glob, a path below a symbolic link or a new link that points\n" +
			"outside the tree is refused with exit 6 (permission_denied/protected_path). Paths are relative to --cwd;\n" +
			"without --cwd, a --sandbox worktree diff (its first line says so) applies at the top of the repository hub runs in.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cwd", Usage: "the tree to apply to (default: the current directory)"},
			&cli.StringSliceFlag{Name: "protect", KeepSpace: true, Usage: "glob of paths the diff may not touch (repeatable); .git is always refused"},
			&cli.BoolFlag{Name: "confirm", Usage: "show the diff on the terminal and ask for a y before applying it"},
		},
		HideHelpCommand: true,
		OnUsageError:    usageErr,
		Action:          applyAction,
	}
}

func applyAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("apply: want one diff FILE (or - for stdin), got %d arguments", c.NArg())
	}
	if err := sandbox.CheckProtect(c.StringSlice("protect")); err != nil {
		return usagef("apply: %v", err)
	}
	root := c.String("cwd")
	if root == "" {
		root = "."
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return usagef("apply: --cwd %s is not a directory", root)
	}
	name := c.Args().First()
	var r io.Reader = c.App.Reader
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return usagef("apply: %v", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() && fi.Mode()&os.ModeNamedPipe == 0 {
			return usagef("apply: %s is not a file", name)
		}
		r = f
	}
	diff, err := io.ReadAll(io.LimitReader(r, sandbox.MaxDiffBytes+1))
	if err != nil {
		return usagef("apply: reading %s: %v", name, err)
	}
	if len(diff) > sandbox.MaxDiffBytes {
		return usagef("apply: %s is over %d bytes, the most hub applies", name, sandbox.MaxDiffBytes)
	}
	if !c.IsSet("cwd") && sandbox.InRepositoryTop(diff) {
		// A worktree sandbox's diff: relative to the repository's top
		// level, wherever in it hub apply runs (as git apply takes it).
		top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			return usagef("apply: %s is a --sandbox worktree diff, relative to a repository's top level, and %s is in no repository: give --cwd", name, root)
		}
		root = strings.TrimSpace(string(top))
	}
	if c.Bool("confirm") {
		if err := (approval{confirm: true}).approveChange(c.Context, diff, nil); err != nil {
			var e *events.Error
			if !errors.As(err, &e) {
				e = events.NewError(events.BinCancelled, events.ReasonCaller, "run it again to apply the diff", "cancelled at the question; nothing was applied")
			}
			return applyFailed(c, e)
		}
	}
	applied, err := sandbox.Apply(c.Context, root, diff, sandbox.ApplyOptions{Protect: c.StringSlice("protect")})
	var ce *sandbox.ConflictError
	var pe *sandbox.ProtectedError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		return applyFailed(c, events.NewError(events.BinInvalidInput, events.ReasonConflict,
			"the tree changed since the diff was made: settle those paths (or make the change again) and apply once more",
			"nothing was applied: %s", joinFirst(ce.Paths)))
	case errors.As(err, &pe):
		return applyFailed(c, events.NewError(events.BinPermissionDenied, events.ReasonProtectedPath,
			"review the diff: it changes paths hub does not apply", "nothing was applied: %s", joinFirst(pe.Paths)))
	case errors.Is(err, sandbox.ErrBadDiff):
		return applyFailed(c, events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"give it a diff written by --diff-out (or git diff --full-index --binary)", "%v", err))
	case c.Context.Err() != nil:
		return applyFailed(c, events.NewError(events.BinCancelled, events.ReasonCaller, "run it again to apply the diff", "cancelled before anything was applied"))
	default:
		return applyFailed(c, events.NewError(events.BinInternal, "", "check the tree's permissions and free space", "%v; nothing was applied", err))
	}
	for _, a := range applied {
		if a.OldPath != "" {
			fmt.Fprintf(c.App.Writer, "%s %s (from %s)\n", a.Kind, shown(a.Path), shown(a.OldPath))
		} else {
			fmt.Fprintf(c.App.Writer, "%s %s\n", a.Kind, shown(a.Path))
		}
	}
	if len(applied) == 0 {
		fmt.Fprintln(c.App.ErrWriter, "hub: the diff changes nothing")
	}
	return nil
}

// applyFailed prints e on stderr and returns its exit error.
func applyFailed(c *cli.Context, e *events.Error) error {
	fmt.Fprintf(c.App.ErrWriter, "hub: %s: %s (next: %s)\n", binReason(e), e.Message, e.Hint)
	return exitError{e}
}

// joinFirst joins the first 20 paths of list, counting the rest.
func joinFirst(list []string) string {
	out := ""
	for i, p := range list {
		if i == 20 {
			return out + fmt.Sprintf("; and %d more", len(list)-20)
		}
		if i > 0 {
			out += "; "
		}
		out += shown(p)
	}
	return out
}
