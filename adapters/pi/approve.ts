// hub's approval gate for pi (see hub's package adapters/pi, approve.go):
// with an approver (hub.WithApprover) and a grant below full, pi is started
// with `--mode rpc --no-extensions -e <this file>`, and this extension's
// tool_call handler, which pi runs before each tool executes, asks hub
// about every call over pi's RPC extension UI: an `input` dialog titled
// "hub-approval" whose placeholder is the call as JSON,
//
//   {"tool", "toolCallId", "input", "paths", "cwd"}
//
// where paths are the call's path and file_path arguments resolved as pi
// 0.73.1's tools resolve them (a leading "@" dropped, Unicode spaces made
// plain, "~" expanded, relative to the working directory). hub answers the
// dialog with a JSON value, {"allow": true} or {"allow": false, "message"}:
// allowed, the call runs; anything else blocks it, with hub's message as
// the reason, which pi gives the model as the call's error and which starts
// "hub: " (hub's decoder counts such a call denied).
//
// An `input` dialog rather than `confirm`: a confirm's answer is a boolean,
// and hub's refusal carries a message for the model. The dialog has no
// timeout (pi would refuse silently when it ran out: hub's approver decides
// how long to wait) and takes the run's abort signal, so that an abort
// does not wait for the answer (without it pi holds the abort until the
// dialog is answered): an aborted question blocks the call.
import * as os from "node:os";
import * as path from "node:path";

// As pi's expandPath and resolveToCwd (dist/core/tools/path-utils.js).
function resolveAsPi(p: string, cwd: string): string {
  let s = p.startsWith("@") ? p.slice(1) : p;
  s = s.replace(/[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g, " ");
  if (s === "~") s = os.homedir();
  else if (s.startsWith("~/")) s = os.homedir() + s.slice(1);
  return path.isAbsolute(s) ? s : path.resolve(cwd, s);
}

export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    if (!ctx.hasUI) {
      return { block: true, reason: "hub: no approver to ask (pi runs without its RPC mode)" };
    }
    const cwd = String(ctx.cwd ?? process.cwd());
    const input = event?.input ?? {};
    const paths: string[] = [];
    for (const key of ["path", "file_path"]) {
      const v = input[key];
      if (typeof v === "string" && v !== "") paths.push(resolveAsPi(v, cwd));
    }
    const call = JSON.stringify({ tool: String(event?.toolName), toolCallId: String(event?.toolCallId), input, paths, cwd });
    const answer = await ctx.ui.input("hub-approval", call, { signal: ctx.signal });
    if (typeof answer !== "string") {
      return { block: true, reason: "hub: the call was not approved (the question was withdrawn)" };
    }
    let d: any;
    try {
      d = JSON.parse(answer);
    } catch {
      d = undefined;
    }
    if (d?.allow === true) return undefined;
    const why = typeof d?.message === "string" && d.message !== "" ? d.message : "the call was not approved";
    return { block: true, reason: "hub: " + why };
  });
}
