// Node side of scripts/bench.sh.
//
//	node scripts/bench-node.mjs parse FILE   # read FILE as the official Claude and
//	                                         # Codex TypeScript SDKs read an agent's
//	                                         # stdout: node:readline, JSON.parse per line
//	node scripts/bench-node.mjs write FILE [MBPS]
//	                                         # print FILE to stdout one line per write,
//	                                         # as a Node CLI prints its events; at most
//	                                         # MBPS MiB/s when given (a slower agent)
import { createReadStream, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { once } from "node:events";

const [mode, file] = process.argv.slice(2);
if (mode === "parse") {
  const rl = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let events = 0;
  for await (const line of rl) {
    if (line.trim() === "") continue;
    const ev = JSON.parse(line);
    if (ev.type !== undefined) events++;
  }
  console.error(`${events} events`);
} else if (mode === "write") {
  const data = readFileSync(file);
  const out = process.stdout;
  const rate = Number(process.argv[4] || 0) * 1048576; // bytes per second, 0: no limit
  const start = performance.now();
  for (let i = 0; i < data.length; ) {
    let j = data.indexOf(10, i);
    j = j < 0 ? data.length : j + 1;
    if (!out.write(data.subarray(i, j))) await once(out, "drain");
    i = j;
    const ahead = rate > 0 ? (i / rate) * 1000 - (performance.now() - start) : 0;
    if (ahead > 5) await new Promise((r) => setTimeout(r, ahead));
  }
} else {
  console.error("usage: bench-node.mjs parse|write FILE");
  process.exit(2);
}
