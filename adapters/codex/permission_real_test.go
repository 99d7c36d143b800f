package codex_test

import (
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
	"github.com/hubcli/hub/grant"
)

// TestRealPermissions: Codex at each --permission level writing a file
// with apply_patch and with exec_command, inside --cwd, outside it (under
// /tmp and in $TMPDIR, which Codex's workspace-write sandbox leaves
// writable unless told not to) and through a link that leads outside,
// checked on the disk (adaptertest.Permissions). Codex cannot be given no
// tools: under none, apply_patch is still offered, and its read-only
// sandbox is what keeps the file off the disk. A call Codex's sandbox
// rejects leaves no event in --json (only a stderr log line), so it is
// Blocked, not Denied: the model is told, hub cannot count it.
func TestRealPermissions(t *testing.T) {
	t.Parallel()
	adaptertest.Permissions(t, adaptertest.PermissionAgent{
		Agent: agent,
		Write: func(path, content string) string {
			return `apply_patch *** Begin Patch\n*** Add File: ` + path + `\n+` + content + `\n*** End Patch`
		},
		Shell: func(path, content string) string {
			return adaptertest.JSONCall("exec_command", map[string]string{"cmd": "echo " + content + " > " + path})
		},
		// No shell; what is left changes no file, or (apply_patch) runs in
		// the read-only sandbox.
		NoneTools: []string{"request_user_input", "apply_patch", "view_image", "get_goal", "create_goal", "update_goal"},
		Want: map[grant.Level]map[adaptertest.Effect]adaptertest.Want{
			grant.None: {
				adaptertest.WriteInside: {Outcome: adaptertest.Blocked, Says: "patch rejected: writing is blocked by read-only sandbox"},
				adaptertest.ShellInside: {Outcome: adaptertest.NotOffered, Says: "NOT_OFFERED exec_command"},
			},
			grant.ReadOnly: {
				adaptertest.WriteInside:  {Outcome: adaptertest.Blocked, Says: "patch rejected: writing is blocked by read-only sandbox"},
				adaptertest.WriteOutside: {Outcome: adaptertest.Blocked, Says: "patch rejected: writing is blocked by read-only sandbox"},
				// The command runs (a shell is Confined under read-only)
				// and fails in the sandbox.
				adaptertest.ShellInside: {Outcome: adaptertest.Blocked, Says: "shell-inside.txt: Read-only file system"},
			},
			grant.WorkspaceWrite: {
				adaptertest.WriteInside:  {Outcome: adaptertest.Written},
				adaptertest.WriteOutside: {Outcome: adaptertest.Blocked, Says: "patch rejected: writing outside of the project"},
				adaptertest.ShellInside:  {Outcome: adaptertest.Written},
				// Under /tmp and in $TMPDIR: both taken out of the sandbox.
				adaptertest.ShellOutside: {Outcome: adaptertest.Blocked, Says: "shell-outside.txt: Read-only file system"},
				// Codex reports this patch (file_change) before it fails, so
				// hub's watch sees the path resolve outside.
				adaptertest.WriteLink: {Outcome: adaptertest.Stopped, Says: "/link/write-link.txt, which resolves to "},
			},
			grant.Full: {
				adaptertest.WriteInside:  {Outcome: adaptertest.Written},
				adaptertest.WriteOutside: {Outcome: adaptertest.Written},
				adaptertest.ShellInside:  {Outcome: adaptertest.Written},
				adaptertest.ShellOutside: {Outcome: adaptertest.Written},
				adaptertest.WriteLink:    {Outcome: adaptertest.Written},
			},
		},
	})
}
