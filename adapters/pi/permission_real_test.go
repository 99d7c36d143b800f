package pi_test

import (
	"strconv"
	"testing"

	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissions: pi at each --permission level writing a file with
// its write tool and with bash, inside --cwd, outside it and through a
// link that leads outside, checked on the disk (hubtest.Permissions).
// pi has no sandbox: under workspace-write hub's extension (confine.ts)
// vetoes a write outside before it runs, and bash is not offered.
// Left out: read-only and none offer neither write nor bash, so where the
// file would go changes nothing.
func TestRealPermissions(t *testing.T) {
	t.Parallel()
	hubtest.Permissions(t, hubtest.PermissionAgent{
		Agent: agent,
		Write: func(path, content string) string {
			return hubtest.JSONCall("write", map[string]string{"path": path, "content": content})
		},
		Shell: func(path, content string) string {
			return hubtest.JSONCall("bash", map[string]string{"command": "echo " + content + " > " + path})
		},
		NoneTools: []string{},
		Want: map[grant.Level]map[hubtest.Effect]hubtest.Want{
			grant.None: {
				hubtest.WriteInside: {Outcome: hubtest.NotOffered},
			},
			grant.ReadOnly: {
				hubtest.WriteInside: {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED write"},
				hubtest.ShellInside: {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED bash"},
			},
			grant.WorkspaceWrite: {
				hubtest.WriteInside: {Outcome: hubtest.Written},
				// pi reports the call (tool_execution_start) before its
				// extensions run: hub's watch stops it first
				// (TestRealPermissionsExtension has the extension block).
				hubtest.WriteOutside: {Outcome: hubtest.Stopped, Says: "outside the working directory"},
				hubtest.ShellInside:  {Outcome: hubtest.NotOffered, Says: "NOT_OFFERED bash"},
				hubtest.WriteLink:    {Outcome: hubtest.Stopped, Says: "/link/write-link.txt, which resolves to "},
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

// TestRealPermissionsExtension: pi reads a path "@/abs/file" as
// /abs/file (its tools drop a leading "@"), which hub's watch reads as a
// relative path inside --cwd and lets through; hub's extension resolves
// it as pi does and blocks the write before it runs, and pi reports the
// call failed with the extension's reason ("hub: …"), which hub counts as
// denied.
func TestRealPermissionsExtension(t *testing.T) {
	t.Parallel()
	write := func(path, content string) string {
		return hubtest.JSONCall("write", map[string]string{"path": "@" + path, "content": content})
	}
	hubtest.Permissions(t, hubtest.PermissionAgent{
		Agent: agent,
		Write: write,
		Shell: write, // not called
		Want: map[grant.Level]map[hubtest.Effect]hubtest.Want{
			grant.WorkspaceWrite: {
				hubtest.WriteInside:  {Outcome: hubtest.Written},
				hubtest.WriteOutside: {Outcome: hubtest.Denied, Says: "hub: @"},
				hubtest.WriteLink:    {Outcome: hubtest.Denied, Says: "hub: @"},
			},
		},
	})
}

// TestRealPermissionProjectCode: below full, pi does not load the working
// directory's extensions (.pi/extensions, code that writes outside --cwd
// when loaded); hub's own extension still loads under workspace-write.
func TestRealPermissionProjectCode(t *testing.T) {
	t.Parallel()
	hubtest.ProjectCode(t, agent, func(lands string) map[string]string {
		return map[string]string{".pi/extensions/evil.ts": "import * as fs from \"node:fs\";\nfs.writeFileSync(" + strconv.Quote(lands) + ", \"pi extension\");\nexport default function (pi: any) {}\n"}
	})
}

// TestRealPermissionDotDotThroughLink: pi writes an absolute
// <cwd>/self/../x as given, and the kernel puts it in the parent of --cwd;
// the watch resolves it as the kernel does and stops the run.
func TestRealPermissionDotDotThroughLink(t *testing.T) {
	t.Parallel()
	hubtest.DotDotThroughLink(t, agent, func(path, content string) string {
		return hubtest.JSONCall("write", map[string]string{"path": path, "content": content})
	})
}
