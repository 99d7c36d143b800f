"""Shared recorder for the approval recordings (testdata/approvals).

Proc spawns one CLI process with piped stdin/stdout, records
  NAME.jsonl        every stdout line, raw
  NAME.stdin.jsonl  every line written to stdin
  NAME.timing.txt   ms since spawn of START / SEND / OUT / WAIT / NOTE / CLOSE / EXIT
  NAME.stderr       stderr (removed when empty)
ModelLog runs a logging HTTP proxy in front of mockllm, so the model requests
can be inspected (the tool results the CLI sent back after each decision):
  NAME.model.jsonl  one line per model request: path, tool names offered,
                    and every tool call / tool result in the conversation.
"""
import http.client
import http.server
import json
import os
import shlex
import signal
import subprocess
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # testdata/approvals
MAIN = os.path.dirname(os.path.dirname(ROOT))                          # the checkout
BIN = os.path.join(MAIN, ".tools/npm/node_modules/.bin")
MODS = os.path.join(MAIN, ".tools/npm/node_modules")


def mock_env(agent, url, d):
    """The exports of scripts/mock-env.sh AGENT URL DIR, as a dict."""
    out = subprocess.run(["bash", os.path.join(MAIN, "scripts/mock-env.sh"), agent, url, d],
                         check=True, capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            k, v = line[len("export "):].split("=", 1)
            vals = shlex.split(v)
            env[k] = vals[0] if vals else ""
    return env


def base_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "OPENCODE_", "PI_"))}
    env.pop("IS_SANDBOX", None)
    env.update(extra)
    return env


# ---------------------------------------------------------------- model proxy

def _summarise(path, body):
    try:
        b = json.loads(body)
    except Exception:
        return {"path": path, "raw": body[:300].decode("utf-8", "replace")}
    rec = {"path": path}
    tools = []
    for t in b.get("tools") or []:
        tools.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    rec["tools"] = tools
    conv = []
    if "input" in b and isinstance(b["input"], list):          # OpenAI Responses
        for it in b["input"]:
            ty = it.get("type")
            if ty in ("function_call", "custom_tool_call"):
                conv.append({"call": it.get("name"), "id": it.get("call_id"),
                             "args": it.get("arguments", it.get("input"))})
            elif ty in ("function_call_output", "custom_tool_call_output"):
                conv.append({"result": it.get("call_id"), "output": it.get("output")})
            elif it.get("role") == "user":
                txt = " ".join(c.get("text", "") for c in it.get("content", []) if isinstance(c, dict))
                if "MOCK_" in txt:
                    conv.append({"user": txt[-300:]})
    for m in b.get("messages") or []:                              # Anthropic / Chat Completions
        c = m.get("content")
        if m.get("role") == "tool":
            conv.append({"result": m.get("tool_call_id"), "output": c})
        for tc in m.get("tool_calls") or []:
            conv.append({"call": tc["function"]["name"], "id": tc.get("id"), "args": tc["function"]["arguments"]})
        if isinstance(c, list):
            for blk in c:
                if not isinstance(blk, dict):
                    continue
                if blk.get("type") == "tool_use":
                    conv.append({"call": blk.get("name"), "id": blk.get("id"), "args": blk.get("input")})
                elif blk.get("type") == "tool_result":
                    conv.append({"result": blk.get("tool_use_id"), "is_error": blk.get("is_error"),
                                 "output": blk.get("content")})
                elif blk.get("type") == "text" and m.get("role") == "user" and "MOCK_" in blk.get("text", ""):
                    conv.append({"user": blk["text"][-300:]})
        elif isinstance(c, str) and m.get("role") == "user" and "MOCK_" in c:
            conv.append({"user": c[-300:]})
    rec["conversation"] = conv
    return rec


def shorten(e, keep_head=2, keep_tail=6):
    """A long conversation (tool loops) keeps its first and last entries and says how many it left out."""
    conv = e.get("conversation") or []
    if len(conv) > keep_head + keep_tail + 1:
        e = dict(e, conversation=conv[:keep_head] + [{"left_out": len(conv) - keep_head - keep_tail}] + conv[-keep_tail:])
    return e


class ModelLog:
    """A logging proxy in front of mockllm. .url is what the CLI is pointed at."""

    def __init__(self, upstream):
        self.up = urllib.parse.urlparse(upstream)
        self.entries = []
        self.t0 = time.monotonic()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                e = _summarise(self.path, body)
                e["ms"] = int((time.monotonic() - outer.t0) * 1000)
                outer.entries.append(e)
                c = http.client.HTTPConnection(outer.up.hostname, outer.up.port, timeout=600)
                hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
                c.request("POST", self.path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                c.close()

            do_GET = do_POST

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def reset(self):
        self.entries = []
        self.t0 = time.monotonic()

    def save(self, path):
        with open(path, "w") as f:
            for e in self.entries:
                f.write(json.dumps(shorten(e)) + "\n")

    def close(self):
        self.srv.shutdown()


# ---------------------------------------------------------------- the process

def _brief(line):
    try:
        m = json.loads(line)
    except Exception:
        return repr(line[:80])
    if not isinstance(m, dict):
        return repr(line[:80])
    if "method" in m:
        s = m["method"]
        if "id" in m:
            s += " id=%s" % m["id"]
        p = m.get("params") or {}
        if isinstance(p, dict):
            if s.startswith("item/") and isinstance(p.get("item"), dict):
                s += " " + str(p["item"].get("type"))
            if isinstance(p.get("update"), dict):
                s += " " + str(p["update"].get("sessionUpdate"))
        return s
    if "type" in m:
        s = m["type"]
        for k in ("subtype", "method", "command"):
            if isinstance(m.get(k), str):
                s += "/" + m[k]
        if m["type"] == "control_request":
            s += "/" + str((m.get("request") or {}).get("subtype"))
        return s
    if "id" in m:
        return " id=%s%s" % (m["id"], " ERROR" if "error" in m else "")
    return repr(line[:80])


class Proc:
    def __init__(self, outdir, name, argv, env, cwd):
        os.makedirs(outdir, exist_ok=True)
        self.base = os.path.join(outdir, name)
        self.t0 = time.monotonic()
        self.lines = []
        self.cond = threading.Condition()
        self.timing = open(self.base + ".timing.txt", "w")
        self.stdin_log = open(self.base + ".stdin.jsonl", "w")
        self.out = open(self.base + ".jsonl", "w")
        self.errf = open(self.base + ".stderr", "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errf,
                                  env=env, cwd=cwd, start_new_session=True)
        self.log("START pid=%d argv=%r" % (self.p.pid, argv))
        self.eof = False
        threading.Thread(target=self._read, daemon=True).start()

    def ms(self):
        return int((time.monotonic() - self.t0) * 1000)

    def log(self, s):
        self.timing.write("%d %s\n" % (self.ms(), s))
        self.timing.flush()

    def note(self, s):
        self.log("NOTE " + s)

    def _read(self):
        for raw in self.p.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.out.write(line + "\n")
            self.out.flush()
            self.log("OUT " + _brief(line))
            try:
                m = json.loads(line)
            except Exception:
                m = None
            with self.cond:
                self.lines.append(m)
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def send(self, obj):
        line = json.dumps(obj)
        self.stdin_log.write(line + "\n")
        self.stdin_log.flush()
        self.log("SEND " + line[:100])
        try:
            self.p.stdin.write((line + "\n").encode())
            self.p.stdin.flush()
        except BrokenPipeError:
            self.log("SEND failed: broken pipe")

    def wait(self, pred, timeout=60, what="", start=0):
        """Waits for a stdout message (from index start) satisfying pred; returns (index, msg) or (None, None)."""
        deadline = time.monotonic() + timeout
        i = start
        with self.cond:
            while True:
                while i < len(self.lines):
                    m = self.lines[i]
                    if m is not None and pred(m):
                        self.log("WAIT %s -> ok" % what)
                        return i, m
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or self.eof:
                    self.log("WAIT %s -> %s" % (what, "eof" if self.eof else "timeout"))
                    return None, None
                self.cond.wait(left)

    def close_stdin(self):
        self.log("CLOSE")
        try:
            self.p.stdin.close()
        except Exception:
            pass

    def finish(self, grace=10):
        try:
            rc = self.p.wait(grace)
        except subprocess.TimeoutExpired:
            self.log("NOTE still running after %ds: SIGTERM to its process group" % grace)
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                rc = self.p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                rc = self.p.wait()
        # leftovers in the group (tools)
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        time.sleep(0.2)
        self.log("EXIT %s" % rc)
        for f in (self.timing, self.stdin_log, self.out, self.errf):
            f.close()
        if os.path.getsize(self.base + ".stderr") == 0:
            os.remove(self.base + ".stderr")
        return rc


def disk(path):
    """What is on disk at path: None if missing, else its text."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None
