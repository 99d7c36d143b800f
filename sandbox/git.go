package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// repo is the git repository a sandbox's root is in, driven through the
// git command.
type repo struct {
	top     string // the top level of its working tree (a real path)
	prefix  string // the sandboxed directory's path below top, "" or "a/b"
	hasHead bool   // HEAD names a commit
	blobs   map[string]bool
	env     []string // more of git's environment for one command (GIT_INDEX_FILE)
}

var errNoGitBinary = errors.New("sandbox: git not found")

// gitEnv is the environment of every git command: the user's, without the
// variables that would point git at another repository, and with no
// prompt.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
}

// findRepo returns the repository dir is in, or nil (and the reason) when
// it is in none or git is not installed.
func findRepo(ctx context.Context, dir string) (*repo, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errNoGitBinary
	}
	r := &repo{top: dir}
	out, err := r.git(ctx, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) < 1 || lines[0] == "" {
		return nil, fmt.Errorf("sandbox: git rev-parse gave %q", out)
	}
	top, err := filepath.EvalSymlinks(lines[0])
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	r.top = top
	if len(lines) > 1 {
		r.prefix = strings.TrimSuffix(lines[1], "/")
	}
	_, herr := r.git(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	r.hasHead = herr == nil
	return r, nil
}

// git runs git in r's top level with args and returns its stdout. Hooks
// never run (core.hooksPath is /dev/null).
func (r *repo) git(ctx context.Context, args ...string) ([]byte, error) {
	return r.gitIn(ctx, r.top, nil, args...)
}

func (r *repo) gitIn(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	// No hook, no fsmonitor command: an agent in a worktree can set
	// either in the config it shares, and hub's git runs must not run it.
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), r.env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("sandbox: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// zsplit splits git's -z output into its names.
func zsplit(out []byte) []string {
	var names []string
	for _, n := range bytes.Split(out, []byte{0}) {
		if len(n) > 0 {
			names = append(names, string(n))
		}
	}
	return names
}

// knownBlobs loads the ids of the blobs of HEAD and of the index, whose
// content the diff can take from the repository rather than from the
// original tree.
func (r *repo) knownBlobs(ctx context.Context) error {
	r.blobs = map[string]bool{}
	if r.hasHead {
		out, err := r.git(ctx, "ls-tree", "-r", "-z", "--full-tree", "HEAD")
		if err != nil {
			return err
		}
		for _, l := range zsplit(out) { // "<mode> blob <oid>\t<path>"
			if f := strings.Fields(l); len(f) >= 3 && f[1] == "blob" {
				r.blobs[f[2]] = true
			}
		}
	}
	out, err := r.git(ctx, "ls-files", "-s", "-z")
	if err != nil {
		return err
	}
	for _, l := range zsplit(out) { // "<mode> <oid> <stage>\t<path>"
		if f := strings.Fields(l); len(f) >= 2 {
			r.blobs[f[1]] = true
		}
	}
	return nil
}

// blob reads the blob oid from the repository.
func (r *repo) blob(ctx context.Context, oid string) ([]byte, error) {
	return r.git(ctx, "cat-file", "blob", oid)
}

// ignored lists the untracked paths below dir that git ignores, relative
// to dir: whole directories end in "/".
func (r *repo) ignored(ctx context.Context, dir string) (map[string]bool, error) {
	out, err := r.gitIn(ctx, dir, nil, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	var dirs []string
	for _, n := range zsplit(out) {
		m[n] = true
		if strings.HasSuffix(n, "/") {
			dirs = append(dirs, n)
		}
	}
	// git names a directory holding only ignored files as one ("build/")
	// though no rule ignores the directory itself: a file the agent adds
	// there is part of the change. Such a directory is not skipped whole;
	// its ignored files are, one by one.
	ign, err := r.checkIgnore(ctx, dir, dirs)
	if err != nil {
		return nil, err
	}
	var partial []string
	for _, d := range dirs {
		if !ign[d] {
			delete(m, d)
			partial = append(partial, d)
		}
	}
	if len(partial) > 0 {
		args := append([]string{"--literal-pathspecs", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--"}, partial...)
		out, err := r.gitIn(ctx, dir, nil, args...)
		if err != nil {
			return nil, err
		}
		for _, n := range zsplit(out) {
			m[n] = true
		}
	}
	return m, nil
}

// hasWorktree reports whether git still lists dir as a worktree of r.
func (r *repo) hasWorktree(ctx context.Context, dir string) bool {
	out, err := r.git(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return true
	}
	return bytes.Contains(append([]byte{0}, out...), []byte("\x00worktree "+dir+"\x00"))
}

// checkIgnore returns those of paths (relative to dir) that git's ignore
// rules in dir's repository ignore.
func (r *repo) checkIgnore(ctx context.Context, dir string, paths []string) (map[string]bool, error) {
	m := map[string]bool{}
	if len(paths) == 0 {
		return m, nil
	}
	in := []byte(strings.Join(paths, "\x00") + "\x00")
	out, err := r.gitIn(ctx, dir, in, "check-ignore", "-z", "--stdin", "--no-index")
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: none ignored
		return nil, err
	}
	for _, n := range zsplit(out) {
		m[n] = true
	}
	return m, nil
}
