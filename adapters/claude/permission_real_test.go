package claude_test

import (
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
	"github.com/hubcli/hub/grant"
)

// TestRealPermissions: Claude Code at each --permission level writing a
// file with its Write tool and with Bash, inside --cwd, outside it and
// through a link that leads outside, checked on the disk
// (adaptertest.Permissions). IS_SANDBOX is unset, as on most machines:
// as root, --permission full must not need it. Left out: read-only and
// none offer neither Write nor Bash, so where the file would go changes
// nothing.
func TestRealPermissions(t *testing.T) {
	t.Parallel()
	a := agent
	a.Configure = func(t testing.TB, e *adaptertest.Env) {
		agent.Configure(t, e)
		e.Env = append(e.Env, "IS_SANDBOX=")
	}
	adaptertest.Permissions(t, adaptertest.PermissionAgent{
		Agent: a,
		Write: func(path, content string) string {
			return adaptertest.JSONCall("Write", map[string]string{"file_path": path, "content": content})
		},
		Shell: func(path, content string) string {
			return adaptertest.JSONCall("Bash", map[string]string{"command": "echo " + content + " > " + path, "description": "w"})
		},
		NoneTools: []string{},
		Want: map[grant.Level]map[adaptertest.Effect]adaptertest.Want{
			grant.None: {
				adaptertest.WriteInside: {Outcome: adaptertest.NotOffered},
			},
			grant.ReadOnly: {
				adaptertest.WriteInside: {Outcome: adaptertest.NotOffered, Says: "NOT_OFFERED Write"},
				adaptertest.ShellInside: {Outcome: adaptertest.NotOffered, Says: "NOT_OFFERED Bash"},
			},
			grant.WorkspaceWrite: {
				adaptertest.WriteInside: {Outcome: adaptertest.Written},
				// Claude Code would deny it too; hub's watch sees the call
				// first.
				adaptertest.WriteOutside: {Outcome: adaptertest.Stopped, Says: "outside the working directory"},
				adaptertest.ShellInside:  {Outcome: adaptertest.Written},
				// Bash is Claude Code's to confine (grant.Rule.Confined).
				adaptertest.ShellOutside: {Outcome: adaptertest.Denied, Says: "The path is outside the working directories"},
				adaptertest.WriteLink:    {Outcome: adaptertest.Stopped, Says: "/link/write-link.txt, which resolves to "},
			},
			// As root: pre-approved tools, and --add-dir=/ for the link.
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

// TestRealPermissionProjectCode: below full, Claude Code does not run the
// working directory's hooks (.claude/settings.json: SessionStart and
// UserPromptSubmit commands that write outside --cwd).
func TestRealPermissionProjectCode(t *testing.T) {
	t.Parallel()
	adaptertest.ProjectCode(t, agent, func(lands string) map[string]string {
		return map[string]string{".claude/settings.json": `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo hook > ` + lands + `"}]}],"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo hook > ` + lands + `"}]}]}}`}
	})
}
