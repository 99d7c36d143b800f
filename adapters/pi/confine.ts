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

// Where a write to p lands: links followed, also for a path that does not
// exist yet and through a dangling link (at most 40 links, as the kernel).
function real(p: string, hops: number): string {
  try {
    return fs.realpathSync(p);
  } catch {}
  if (hops < 40) {
    try {
      if (fs.lstatSync(p).isSymbolicLink()) {
        return real(path.resolve(path.dirname(p), fs.readlinkSync(p)), hops + 1);
      }
    } catch {}
  }
  const dir = path.dirname(p);
  return dir === p ? p : path.join(real(dir, hops), path.basename(p));
}

export default function (pi: any) {
  const cwd = process.cwd();
  const root = real(cwd, 0);
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
      const where = real(resolveAsPi(v, cwd), 0);
      if (!inside(where)) {
        return { block: true, reason: `hub: ${v} resolves to ${where}, outside the working directory ${root} that --permission workspace-write grants` };
      }
    }
    return undefined;
  });
}
