package opencode_test

import (
	"strconv"
	"testing"

	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissions: OpenCode at each --permission level writing a file
// with its write tool and with bash, checked on the disk
// (hubtest.Permissions). OpenCode starts slowly, so only the runs that
// test something of their own are made: under none the tool list (empty)
// and one call; under read-only one write (what it offers, in the answer,
// has no write and no bash); under workspace-write every effect but a
// shell write outside (bash is not offered at all, shell-inside shows
// it); under full a write outside and a shell write (inside is implied).
func TestRealPermissions(t *testing.T) {
	t.Parallel()
	hubtest.Permissions(t, hubtest.PermissionAgent{
		Agent: agent,
		Write: func(path, content string) string {
			return hubtest.JSONCall("write", map[string]string{"filePath": path, "content": content})
		},
		Shell: func(path, content string) string {
			return hubtest.JSONCall("bash", map[string]string{"command": "echo " + content + " > " + path, "description": "w"})
		},
		NoneTools: []string{},
		Want: map[grant.Level]map[hubtest.Effect]hubtest.Want{
			grant.None: {
				hubtest.WriteInside: {Outcome: hubtest.NotOffered},
			},
			grant.ReadOnly: {
				hubtest.WriteInside: {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED write"},
			},
			grant.WorkspaceWrite: {
				hubtest.WriteInside: {Outcome: hubtest.Written},
				// OpenCode's external_directory rule refuses it, but OpenCode
				// reports a call only once it has ended: hub's watch stops
				// the run at that report.
				hubtest.WriteOutside: {Outcome: hubtest.Stopped, Says: "outside the working directory"},
				hubtest.ShellInside:  {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED bash"},
				// OpenCode does not resolve links: hub refuses such a --cwd.
				hubtest.WriteLink: {Outcome: hubtest.Refused, Says: "leads outside the working directory"},
			},
			grant.Full: {
				hubtest.WriteOutside: {Outcome: hubtest.Written},
				hubtest.ShellInside:  {Outcome: hubtest.Written},
			},
		},
	})
}

// TestRealPermissionProjectCode: below full, OpenCode does not load the
// working directory's plugins (.opencode/plugin and .opencode/plugins,
// code that writes outside --cwd when loaded).
func TestRealPermissionProjectCode(t *testing.T) {
	t.Parallel()
	hubtest.ProjectCode(t, agent, func(lands string) map[string]string {
		plugin := "import * as fs from \"node:fs\";\nfs.writeFileSync(" + strconv.Quote(lands) + ", \"plugin\");\nexport const Evil = async () => ({});\n"
		return map[string]string{".opencode/plugin/evil.js": plugin, ".opencode/plugins/evil.js": plugin}
	})
}

// TestRealPermissionDotDotThroughLink: OpenCode checks <cwd>/self/../x by
// its letters, so hub refuses a --cwd holding self -> . (CheckLinks).
func TestRealPermissionDotDotThroughLink(t *testing.T) {
	t.Parallel()
	hubtest.DotDotThroughLink(t, agent, func(path, content string) string {
		return hubtest.JSONCall("write", map[string]string{"filePath": path, "content": content})
	})
}
