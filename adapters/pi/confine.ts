// hub's grant for pi under `--permission workspace-write` (see hub's package
// adapters/pi): pi is started with `--tools read,grep,find,ls,edit,write -e
// <this file>`, and this extension's tool_call handler, which pi runs
// before each tool executes, blocks (a) every tool but those, and (b) a
// write or edit whose path, resolved as pi 0.73.1's tools resolve it (a
// leading "@" dropped, Unicode spaces made plain, "~" expanded, relative to
// the working directory) and then with every symbolic link followed, lies
// outside the working directory. A blocked call is reported by pi as a
// failed tool result whose text starts "hub: ".
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const granted = new Set(["read", "grep", "find", "ls", "edit", "write"]);

// As pi's expandPath and resolveToCwd (dist/core/tools/path-utils.js).
function resolveAsPi(p: string, cwd: string): string {
  let s = p.startsWith("@") ? p.slice(1) : p;
  s = s.replace(/[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g, " ");
  if (s === "~") s = os.homedir();
  else if (s.startsWith("~/")) s = os.homedir() + s.slice(1);
  return path.isAbsolute(s) ? s : path.resolve(cwd, s);
}

// Where a write to p (absolute, as pi passes it to the kernel) lands, as the
// kernel resolves it: component by component, a symbolic link replaced by
// its target before the components after it ("link/.." is the parent of
// the link's target; Node's path.resolve and fs.realpathSync would clean
// the ".." first), a missing component taken as written. null when the
// kernel would not open it either (over PATH_MAX, more than 40 links):
// such a write is blocked. As realPath in hub's adapters/permission.go.
function real(p: string): string | null {
  if (p.length > 4096) return null;
  let rest = p.split("/");
  let cur = "/";
  let hops = 0;
  let steps = 0;
  while (rest.length > 0) {
    const c = rest.shift() as string;
    if (++steps > 4096 || cur.length > 4096) return null;
    if (c === "" || c === ".") continue;
    if (c === "..") {
      cur = path.dirname(cur);
      continue;
    }
    const next = cur === "/" ? "/" + c : cur + "/" + c;
    let link = false;
    try {
      link = fs.lstatSync(next).isSymbolicLink();
    } catch {}
    if (!link) {
      cur = next;
      continue;
    }
    if (++hops > 40) return null;
    let target: string;
    try {
      target = fs.readlinkSync(next);
    } catch {
      return null;
    }
    if (target.startsWith("/")) cur = "/";
    rest = target.split("/").concat(rest);
  }
  return cur;
}

export default function (pi: any) {
  const cwd = process.cwd();
  const root = real(cwd) ?? cwd;
  const inside = (p: string) => p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
  pi.on("tool_call", async (event: any) => {
    const name = String(event?.toolName);
    if (!granted.has(name)) {
      return { block: true, reason: `hub: --permission workspace-write does not grant the ${name} tool` };
    }
    if (name !== "write" && name !== "edit") return undefined;
    const input = event?.input ?? {};
    for (const key of ["path", "file_path"]) {
      const v = input[key];
      if (v === undefined) continue;
      if (typeof v !== "string") return { block: true, reason: `hub: ${name} with a ${key} that is not a string` };
      const where = real(resolveAsPi(v, cwd));
      if (where === null) {
        return { block: true, reason: `hub: cannot tell where ${v} lands (over PATH_MAX, or more than 40 links)` };
      }
      if (!inside(where)) {
        return { block: true, reason: `hub: ${v} resolves to ${where}, outside the working directory ${root} that --permission workspace-write grants` };
      }
    }
    return undefined;
  });
}
