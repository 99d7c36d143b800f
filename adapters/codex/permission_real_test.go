package codex_test

import (
	"testing"

	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissions: Codex at each --permission level writing a file
// with apply_patch and with exec_command, inside --cwd, outside it (under
// /tmp and in $TMPDIR, which Codex's workspace-write sandbox leaves
// writable unless told not to) and through a link that leads outside,
// checked on the disk (hubtest.Permissions). Codex cannot be given no
// tools: under none, apply_patch is still offered, and its read-only
// sandbox is what keeps the file off the disk. A call Codex's sandbox
// rejects leaves no event in --json (only a stderr log line), so it is
// Blocked, not Denied: the model is told, hub cannot count it.
func TestRealPermissions(t *testing.T) {
	t.Parallel()
	hubtest.Permissions(t, hubtest.PermissionAgent{
		Agent: agent,
		Write: func(path, content string) string {
			return `apply_patch *** Begin Patch\n*** Add File: ` + path + `\n+` + content + `\n*** End Patch`
		},
		Shell: func(path, content string) string {
			return hubtest.JSONCall("exec_command", map[string]string{"cmd": "echo " + content + " > " + path})
		},
		// No shell; what is left changes no file, or (apply_patch) runs in
		// the read-only sandbox.
		NoneTools: []string{"request_user_input", "apply_patch", "view_image", "get_goal", "create_goal", "update_goal"},
		Want: map[grant.Level]map[hubtest.Effect]hubtest.Want{
			grant.None: {
				hubtest.WriteInside: {Outcome: hubtest.Blocked, Says: "patch rejected: writing is blocked by read-only sandbox"},
				hubtest.ShellInside: {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED exec_command"},
			},
			grant.ReadOnly: {
				hubtest.WriteInside:  {Outcome: hubtest.Blocked, Says: "patch rejected: writing is blocked by read-only sandbox"},
				hubtest.WriteOutside: {Outcome: hubtest.Blocked, Says: "patch rejected: writing is blocked by read-only sandbox"},
				// The command runs (a shell is Confined under read-only)
				// and fails in the sandbox.
				hubtest.ShellInside: {Outcome: hubtest.Blocked, Says: "shell-inside.txt: Read-only file system"},
			},
			grant.WorkspaceWrite: {
				hubtest.WriteInside:  {Outcome: hubtest.Written},
				hubtest.WriteOutside: {Outcome: hubtest.Blocked, Says: "patch rejected: writing outside of the project"},
				hubtest.ShellInside:  {Outcome: hubtest.Written},
				// Under /tmp and in $TMPDIR: both taken out of the sandbox.
				hubtest.ShellOutside: {Outcome: hubtest.Blocked, Says: "shell-outside.txt: Read-only file system"},
				// Codex reports this patch (file_change) before it fails, so
				// hub's watch sees the path resolve outside.
				hubtest.WriteLink: {Outcome: hubtest.Stopped, Says: "/link/write-link.txt, which resolves to "},
			},
			grant.Full: {
				hubtest.WriteInside:  {Outcome: hubtest.Written},
				hubtest.WriteOutside: {Outcome: hubtest.Written},
				hubtest.ShellInside:  {Outcome: hubtest.Written},
				hubtest.ShellOutside: {Outcome: hubtest.Written},
				hubtest.WriteLink:    {Outcome: hubtest.Written},
			},
		},
	})
}
