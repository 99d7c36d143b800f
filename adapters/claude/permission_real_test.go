package claude_test

import (
	"testing"

	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissions: Claude Code at each --permission level writing a
// file with its Write tool and with Bash, inside --cwd, outside it and
// through a link that leads outside, checked on the disk
// (hubtest.Permissions). IS_SANDBOX is unset, as on most machines:
// as root, --permission full must not need it. Left out: read-only and
// none offer neither Write nor Bash, so where the file would go changes
// nothing.
func TestRealPermissions(t *testing.T) {
	t.Parallel()
	a := agent
	a.Configure = func(t testing.TB, e *hubtest.Env) {
		agent.Configure(t, e)
		e.Env = append(e.Env, "IS_SANDBOX=")
	}
	hubtest.Permissions(t, hubtest.PermissionAgent{
		Agent: a,
		Write: func(path, content string) string {
			return hubtest.JSONCall("Write", map[string]string{"file_path": path, "content": content})
		},
		Shell: func(path, content string) string {
			return hubtest.JSONCall("Bash", map[string]string{"command": "echo " + content + " > " + path, "description": "w"})
		},
		NoneTools: []string{},
		Want: map[grant.Level]map[hubtest.Effect]hubtest.Want{
			grant.None: {
				hubtest.WriteInside: {Outcome: hubtest.NotOffered},
			},
			grant.ReadOnly: {
				hubtest.WriteInside: {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED Write"},
				hubtest.ShellInside: {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED Bash"},
			},
			grant.WorkspaceWrite: {
				hubtest.WriteInside: {Outcome: hubtest.Written},
				// Claude Code would deny it too; hub's watch sees the call
				// first.
				hubtest.WriteOutside: {Outcome: hubtest.Stopped, Says: "outside the working directory"},
				hubtest.ShellInside:  {Outcome: hubtest.Written},
				// Bash is Claude Code's to confine (grant.Rule.Confined).
				hubtest.ShellOutside: {Outcome: hubtest.Denied, Says: "The path is outside the working directories"},
				hubtest.WriteLink:    {Outcome: hubtest.Stopped, Says: "/link/write-link.txt, which resolves to "},
			},
			// As root: pre-approved tools, and --add-dir=/ for the link.
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

// TestRealPermissionProjectCode: below full, Claude Code does not run the
// working directory's hooks (.claude/settings.json: SessionStart and
// UserPromptSubmit commands that write outside --cwd).
func TestRealPermissionProjectCode(t *testing.T) {
	t.Parallel()
	hubtest.ProjectCode(t, agent, func(lands string) map[string]string {
		return map[string]string{".claude/settings.json": `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo hook > ` + lands + `"}]}],"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo hook > ` + lands + `"}]}]}}`}
	})
}
