// Package sandbox runs an agent on a copy of its working tree and turns
// what the agent did into a reviewable change (SPEC §6.3).
//
// It owns: making the sandbox (a copy of a directory, or a git worktree of a
// repository carrying the user's uncommitted and untracked files), the
// snapshot it started from, comparing the sandbox with that snapshot
// (Changes: one File per changed path, paths that are protected or resolve
// outside the root, and a git-style diff), applying a diff to the original
// tree only where every path it touches is still as it was (Apply, all or
// nothing), and removing the sandbox.
//
// It does not own running the agent, events or bins: the run engine
// (package hub) maps its errors (*ConflictError, *ProtectedError) onto
// invalid_input/conflict and permission_denied/protected_path.
//
// What a sandbox isolates: the agent's working directory is the sandbox,
// so relative paths and tools that stay under their working directory
// change only the sandbox. It does not isolate absolute paths outside it:
// an agent that writes to the original tree by its absolute path, or to
// $HOME, writes there (the permission levels of package grant are what hold an
// agent to its working directory). In worktree mode the repository's
// object store, refs and config are shared with the sandbox: a commit the
// agent makes adds objects to the repository, and a change to a ref, the
// config or a hook is reported as a change to a protected path.
//
// Diffs are made with github.com/aymanbagabas/go-udiff (the line diff of
// gopls) and written, parsed and applied with
// github.com/bluekeyes/go-gitdiff, so that `git apply` takes them too.
package sandbox
