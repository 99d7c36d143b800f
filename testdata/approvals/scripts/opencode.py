"""OpenCode 1.18.33 `opencode acp` permission requests against mockllm (testdata/approvals/opencode).

usage: python3 opencode.py MOCKLLM_URL [recording ...]
Config as hub's opencode adapter writes it for a live session (adapters/opencode/opencode.go): the
mock-env.sh config file (OPENCODE_CONFIG) plus OPENCODE_CONFIG_CONTENT defining the primary agent
"hub-ask" with the permission rules below, default_agent hub-ask, the title agent disabled, and
OPENCODE_DISABLE_PROJECT_CONFIG=1. One `opencode acp` process per recording, one ACP session per case
(MOCK_CALL calls once per conversation).
cwd /tmp/appr/work/opencode-<name>; outside dir /var/tmp/appr/outside/opencode-<name>.
"""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec  # noqa: E402

OUT = os.path.join(rec.ROOT, "opencode")
RULES = {"*": "deny", "read": "ask", "glob": "allow", "grep": "allow", "list": "allow",
         "edit": "ask", "bash": "ask", "external_directory": "ask"}
SUMMARY = []


def say(s):
    print(s)
    SUMMARY.append(s)


def inline_config(rules):
    return json.dumps({"agent": {"hub-ask": {"mode": "primary", "permission": rules,
                                             "description": "approval recordings: every write, edit, bash, read asks"},
                                 "title": {"disable": True}},
                       "default_agent": "hub-ask"})


class Acp:
    def __init__(self, mock, name, rules=RULES):
        self.name = name
        self.cwd = "/tmp/appr/work/opencode-" + name
        self.outside = "/var/tmp/appr/outside/opencode-" + name
        for d in (self.cwd, self.outside):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        envd = "/var/tmp/appr/env/opencode-" + name
        shutil.rmtree(envd, ignore_errors=True)
        self.proxy = rec.ModelLog(mock)
        env = rec.base_env(rec.mock_env("opencode", self.proxy.url, envd))
        env.update({"OPENCODE_CONFIG_CONTENT": inline_config(rules), "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
                    "OPENCODE_DISABLE_AUTOUPDATE": "1"})
        self.p = rec.Proc(OUT, name, [os.path.join(rec.BIN, "opencode"), "acp"], env, self.cwd)
        self.p.note("OPENCODE_CONFIG_CONTENT=" + env["OPENCODE_CONFIG_CONTENT"])
        self.next_id = 10
        self.pos = 0
        self.rpc("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}, timeout=60)

    def rpc(self, method, params, wait=True, timeout=30):
        i = self.next_id
        self.next_id += 1
        self.p.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        if not wait:
            return i, None
        _, m = self.p.wait(lambda m: m.get("id") == i and "method" not in m, timeout=timeout, what=method)
        return i, m

    def session(self):
        _, m = self.rpc("session/new", {"cwd": self.cwd, "mcpServers": []}, timeout=60)
        return m["result"]["sessionId"]

    def close(self):
        self.p.close_stdin()
        rc = self.p.finish()
        self.proxy.save(self.p.base + ".model.jsonl")
        self.proxy.close()
        return rc


def tool_results(acp, since):
    return [c["output"] for e in acp.proxy.entries[since:] for c in e["conversation"] if "result" in c]


def brief(m):
    p = dict(m["params"])
    p.pop("sessionId", None)
    return json.dumps(p)


def case(acp, label, prompt, answer, target, setup=None, during=None, wait=60):
    """One session, one prompt. answer(req) -> the JSON-RPC result, or None to leave it unanswered."""
    if setup:
        setup(acp)
    sid = acp.session()
    prompt = prompt.replace("CWD", acp.cwd).replace("OUTSIDE", acp.outside)
    acp.p.note("case %s" % label)
    since = len(acp.proxy.entries)
    pid, _ = acp.rpc("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]}, wait=False)
    reqs, stop = [], None
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        i, m = acp.p.wait(lambda m: m.get("id") == pid and "method" not in m or m.get("method") == "session/request_permission",
                          timeout=deadline - time.monotonic(), start=acp.pos, what="request_permission or prompt result")
        if m is None:
            break
        acp.pos = i + 1
        if "method" not in m:
            stop = m.get("result", m.get("error"))
            break
        reqs.append(m)
        if during:
            during(acp, sid, m)
        r = answer(m)
        if r is not None:
            acp.p.send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    time.sleep(0.5)
    t = target.replace("CWD", acp.cwd).replace("OUTSIDE", acp.outside) if target else None
    on_disk = rec.disk(t) if t else None
    acp.p.note("case %s: %d requests, prompt result %s, on disk %r" % (label, len(reqs), json.dumps(stop), on_disk))
    say("- %s: %s\n    prompt result %s; on disk %r; model got %s" % (
        label, "\n    ".join(["requests:"] + [brief(r) for r in reqs[:3]]) if reqs else "NO REQUEST",
        json.dumps(stop), on_disk, json.dumps(tool_results(acp, since)[-2:])))
    return sid, reqs, stop


def pick(option):
    return lambda req: {"outcome": {"outcome": "selected", "optionId": option}}


def cancelled(req):
    return {"outcome": {"outcome": "cancelled"}}


def W(path):
    return 'Write a file. MOCK_CALL write {"filePath":"%s","content":"hello\\n"}' % path


def bash(cmd):
    return 'Run it. MOCK_CALL bash {"command":%s,"description":"test command"}' % json.dumps(cmd)


def mkfile(name, text):
    def setup(acp):
        with open(os.path.join(acp.cwd, name), "w") as f:
            f.write(text)
    return setup


EDIT = 'Edit. MOCK_CALL edit {"filePath":"CWD/e-%s.txt","oldString":"two","newString":"TWO"}'


def decisions(mock):
    acp = Acp(mock, "decisions")
    say("\n## decisions (cwd %s, rules %s)" % (acp.cwd, json.dumps(RULES)))
    case(acp, "write cwd once", W("CWD/w-once.txt"), pick("once"), "CWD/w-once.txt")
    case(acp, "write cwd reject", W("CWD/w-reject.txt"), pick("reject"), "CWD/w-reject.txt")
    case(acp, "write cwd outcome cancelled", W("CWD/w-cancelled.txt"), cancelled, "CWD/w-cancelled.txt")
    case(acp, "write cwd unknown optionId", W("CWD/w-bad.txt"), pick("no-such-option"), "CWD/w-bad.txt")
    for opt in ("once", "reject"):
        case(acp, "edit cwd " + opt, EDIT % opt, pick(opt), "CWD/e-%s.txt" % opt,
             setup=mkfile("e-%s.txt" % opt, "one\ntwo\nthree\n"))
    for opt in ("once", "reject"):
        case(acp, "bash write " + opt, bash("printf x > b-%s.txt" % opt), pick(opt), "CWD/b-%s.txt" % opt)
    case(acp, "bash echo once", bash("echo hi"), pick("once"), None)
    case(acp, "read cwd once", 'Read. MOCK_CALL read {"filePath":"CWD/r.txt"}', pick("once"), "CWD/r.txt",
         setup=mkfile("r.txt", "data\n"))
    case(acp, "write outside once", W("OUTSIDE/w.txt"), pick("once"), "OUTSIDE/w.txt")
    case(acp, "write outside: reject the external_directory request", W("OUTSIDE/w2.txt"), pick("reject"), "OUTSIDE/w2.txt")
    case(acp, "bash write outside once", bash("printf x > OUTSIDE/b.txt"), pick("once"), "OUTSIDE/b.txt")
    say("exit %s" % acp.close())


def always(mock):
    """Is `always` kept for the session, the process, or longer?"""
    acp = Acp(mock, "always")
    say("\n## always (cwd %s)" % acp.cwd)
    case(acp, "write cwd always (session 1)", W("CWD/w1.txt"), pick("always"), "CWD/w1.txt")
    case(acp, "write another file, NEW session 2", W("CWD/w2.txt"), pick("reject"), "CWD/w2.txt")
    case(acp, "edit a file, NEW session 3", EDIT % "x", pick("reject"), "CWD/e-x.txt", setup=mkfile("e-x.txt", "one\ntwo\nthree\n"))
    case(acp, "bash printf always (session 4)", bash("printf x > b1.txt"), pick("always"), "CWD/b1.txt")
    case(acp, "bash printf to another file, NEW session 5", bash("printf y > b2.txt"), pick("reject"), "CWD/b2.txt")
    case(acp, "bash touch, NEW session 6", bash("touch b3.txt"), pick("reject"), "CWD/b3.txt")
    say("exit %s" % acp.close())
    # the same home and cwd in a new process
    acp2 = Acp.__new__(Acp)
    acp2.name, acp2.cwd, acp2.outside = "always-restart", acp.cwd, acp.outside
    envd = "/var/tmp/appr/env/opencode-always"
    acp2.proxy = rec.ModelLog(mock)
    env = rec.base_env(rec.mock_env("opencode", acp2.proxy.url, envd))
    env.update({"OPENCODE_CONFIG_CONTENT": inline_config(RULES), "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
                "OPENCODE_DISABLE_AUTOUPDATE": "1"})
    acp2.p = rec.Proc(OUT, "always-restart", [os.path.join(rec.BIN, "opencode"), "acp"], env, acp.cwd)
    acp2.p.note("a new process, same HOME/XDG dirs and cwd as always.jsonl")
    acp2.next_id, acp2.pos = 10, 0
    acp2.rpc("initialize", {"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}, timeout=60)
    say("\n## always-restart (new process, same home and cwd)")
    case(acp2, "write after restart", W("CWD/w3.txt"), pick("reject"), "CWD/w3.txt")
    case(acp2, "bash printf after restart", bash("printf z > b4.txt"), pick("reject"), "CWD/b4.txt")
    say("exit %s" % acp2.close())


def loop(mock):
    """MOCK_TOOLLOOP repeats bash `echo mock-tool-ok`: asked again after once / always?"""
    acp = Acp(mock, "loop")
    say("\n## loop (cwd %s)" % acp.cwd)
    for opt in ("once", "always"):
        sid = acp.session()
        acp.p.note("loop with %s" % opt)
        pid, _ = acp.rpc("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Loop. MOCK_TOOLLOOP"}]},
                         wait=False)
        asked, t_end = 0, None
        while True:
            left = 60 if t_end is None else t_end - time.monotonic()
            if left <= 0:
                break
            i, m = acp.p.wait(lambda m: m.get("method") == "session/request_permission" or m.get("id") == pid,
                              timeout=left, start=acp.pos, what="request or result")
            if m is None:
                break
            acp.pos = i + 1
            if "method" not in m:
                break
            asked += 1
            if t_end is None:
                t_end = time.monotonic() + 15
            acp.p.send({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": {"outcome": "selected", "optionId": opt}}})
        runs = sum(1 for x in acp.p.lines[:] if x and x.get("method") == "session/update"
                   and x["params"].get("sessionId") == sid
                   and x["params"]["update"].get("sessionUpdate") == "tool_call_update"
                   and x["params"]["update"].get("status") == "completed")
        say("- loop bash `echo mock-tool-ok`, answer %s: %d requests, %d completed tool calls in 15 s" % (opt, asked, runs))
        acp.p.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
        i, m = acp.p.wait(lambda m: m.get("id") == pid, timeout=20, start=acp.pos, what="prompt result after cancel")
        if m and m.get("method") == "session/request_permission":
            pass
    # a new session after "always": is the grant per session or per process?
    case(acp, "bash echo in a NEW session after always", bash("echo mock-tool-ok"), pick("once"), None)
    say("exit %s" % acp.close())


def timing(mock):
    acp = Acp(mock, "timing")
    say("\n## timing (cwd %s)" % acp.cwd)

    def late(req):
        time.sleep(5)
        return pick("once")(req)
    case(acp, "write once after 5 s", W("CWD/late.txt"), late, "CWD/late.txt")

    def change(acp, sid, m):
        with open(os.path.join(acp.cwd, "e-changed.txt"), "w") as f:
            f.write("one\nSOMEONE ELSE\nthree\n")
        acp.p.note("e-changed.txt changed on disk while the request was pending")
    case(acp, "edit, target changed before once", EDIT % "changed", pick("once"), "CWD/e-changed.txt",
         setup=mkfile("e-changed.txt", "one\ntwo\nthree\n"), during=change)

    def cancel(acp, sid, m):
        time.sleep(0.5)
        acp.p.note("session/cancel while the permission request is pending")
        acp.p.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
        time.sleep(2)
    sid, reqs, stop = case(acp, "session/cancel while pending (then a late once)", W("CWD/cancel.txt"),
                           lambda r: None, "CWD/cancel.txt", during=cancel, wait=20)
    if reqs:
        acp.p.note("answering the request late after the cancel")
        acp.p.send({"jsonrpc": "2.0", "id": reqs[0]["id"], "result": {"outcome": {"outcome": "selected", "optionId": "once"}}})
        time.sleep(2)
        say("    after a late `once` to the cancelled request: cancel.txt %r" % rec.disk(os.path.join(acp.cwd, "cancel.txt")))
    case(acp, "a following prompt", "Still there? MOCK_TEXT", pick("once"), None)
    # what the model is told of a reject: the next prompt of the same session carries the tool result
    sid, reqs, stop = case(acp, "write reject, then a second prompt in the same session", W("CWD/rej.txt"),
                           pick("reject"), "CWD/rej.txt")
    since = len(acp.proxy.entries)
    acp.p.note("second prompt in the session whose write was rejected")
    pid, _ = acp.rpc("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "And now? MOCK_ANSWER second"}]},
                     wait=False)
    acp.p.wait(lambda m: m.get("id") == pid, timeout=30, start=acp.pos, what="second prompt result")
    conv = acp.proxy.entries[since]["conversation"] if len(acp.proxy.entries) > since else None
    say("    the second prompt's model request carries: %s" % json.dumps(conv))
    wait_s = int(os.environ.get("NO_ANSWER_S", "150"))
    sid, reqs, stop = case(acp, "never answered (%d s)" % wait_s, W("CWD/never.txt"), lambda r: None, "CWD/never.txt",
                           wait=wait_s)
    say("exit after stdin closed with the request pending: %s" % acp.close())


ALL = {"decisions": decisions, "always": always, "loop": loop, "timing": timing}

if __name__ == "__main__":
    mock = sys.argv[1]
    names = sys.argv[2:] or list(ALL)
    for n in names:
        ALL[n](mock)
    with open(os.path.join(OUT, "summary.txt" if len(sys.argv) == 2 else "summary-%s.txt" % "-".join(names)), "w") as f:
        f.write("\n".join(SUMMARY) + "\n")
