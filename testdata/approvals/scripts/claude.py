"""Claude Code 2.1.328 approvals over --permission-prompt-tool stdio against mockllm
(testdata/approvals/claude). One process per recording (MOCK_CALL calls once per conversation).

usage: python3 claude.py MOCKLLM_URL [case ...]
Base argv: claude -p --input-format stream-json --output-format stream-json --verbose
  --include-partial-messages --tools=Read,Glob,Grep,Write,Edit,Bash --permission-mode=<mode>
  --setting-sources=user --strict-mcp-config --permission-prompt-tool stdio [--settings JSON]
cwd /tmp/appr/work/claude-<case>; outside dir /var/tmp/appr/outside/claude-<case>;
env from scripts/mock-env.sh under /var/tmp/appr/env/claude-<case>.
"""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec  # noqa: E402

OUT = os.path.join(rec.ROOT, "claude")
ASK_ALL = json.dumps({"permissions": {"ask": ["Bash", "Edit", "Write", "Read", "Glob", "Grep"]}})
SUMMARY = []


def say(s):
    print(s)
    SUMMARY.append(s)


def allow(req, **kw):
    r = {"behavior": "allow", "updatedInput": req["request"]["input"]}
    r.update(kw)
    return r


def deny(req, msg="hub test: denied by the approver", interrupt=None):
    r = {"behavior": "deny", "message": msg}
    if interrupt is not None:
        r["interrupt"] = interrupt
    return r


def run(mock, name, prompt, responder, mode="default", settings=None, setup=None, after_request=None,
        wait_result=60, loop_seconds=None):
    cwd = "/tmp/appr/work/claude-" + name
    outside = "/var/tmp/appr/outside/claude-" + name
    for d in (cwd, outside):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    envd = "/var/tmp/appr/env/claude-" + name
    shutil.rmtree(envd, ignore_errors=True)
    proxy = rec.ModelLog(mock)
    env = rec.base_env(rec.mock_env("claude", proxy.url, envd))
    argv = [os.path.join(rec.BIN, "claude"), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
            "--verbose", "--include-partial-messages", "--tools=Read,Glob,Grep,Write,Edit,Bash",
            "--permission-mode=" + mode, "--setting-sources=user", "--strict-mcp-config",
            "--permission-prompt-tool", "stdio"]
    if settings:
        argv += ["--settings", settings]
    prompt = prompt.replace("CWD", cwd).replace("OUTSIDE", outside)
    if setup:
        setup(cwd, outside)
    p = rec.Proc(OUT, name, argv, env, cwd)
    p.send({"type": "user", "message": {"role": "user", "content": prompt}, "parent_tool_use_id": None, "session_id": ""})
    reqs, pos = [], 0
    deadline = time.monotonic() + wait_result
    result = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        i, m = p.wait(lambda m: m.get("type") in ("result", "control_request"), timeout=left, start=pos,
                      what="control_request or result")
        if m is None:
            break
        pos = i + 1
        if m["type"] == "result":
            result = m
            break
        reqs.append(m)
        if loop_seconds and len(reqs) == 1:
            deadline = time.monotonic() + loop_seconds
        if after_request:
            after_request(p, m, cwd)
        r = responder(m)
        if r is not None:
            p.send({"type": "control_response",
                    "response": {"subtype": "success", "request_id": m["request_id"], "response": r}})
    if result is None and loop_seconds:
        p.note("interrupting after %d s" % loop_seconds)
        p.send({"type": "control_request", "request_id": "int1", "request": {"subtype": "interrupt"}})
        while True:
            i, m = p.wait(lambda m: m.get("type") in ("result", "control_request"), timeout=20, start=pos, what="result")
            if m is None:
                break
            pos = i + 1
            if m["type"] == "result":
                result = m
                break
            p.send({"type": "control_response", "response": {"subtype": "success", "request_id": m["request_id"],
                                                             "response": deny(m)}})
    time.sleep(0.3)
    files = {}
    for d in (cwd, outside):
        for root, _, fs in os.walk(d):
            for f in sorted(fs):
                files[os.path.join(root, f)] = rec.disk(os.path.join(root, f))
    p.close_stdin()
    rc = p.finish(grace=10)
    proxy.save(p.base + ".model.jsonl")
    proxy.close()
    results = [c for e in proxy.entries for c in e["conversation"] if "result" in c]
    denials = result and result.get("permission_denials")
    say("\n### %s (mode %s%s)\n- prompt: %s\n- requests (%d): %s\n- result: %s\n- files after: %s\n- model got: %s\n- exit %s" % (
        name, mode, ", settings " + settings if settings else "", prompt, len(reqs),
        "\n    ".join([""] + [json.dumps(r["request"]) for r in reqs[:3]]) + ("\n    …" if len(reqs) > 3 else ""),
        result and json.dumps({k: result.get(k) for k in ("subtype", "is_error", "terminal_reason", "result",
                                                           "permission_denials")}),
        json.dumps(files), json.dumps(results[:3]), rc))
    return reqs, result


def W(path="CWD/w.txt", content="hello\\n"):
    return 'Write a file. MOCK_CALL Write {"file_path":"%s","content":"%s"}' % (path, content)


def bash(cmd):
    return 'Run it. MOCK_CALL Bash {"command":%s,"description":"test command"}' % json.dumps(cmd)


def edit_setup(cwd, outside):
    with open(os.path.join(cwd, "e.txt"), "w") as f:
        f.write("one\ntwo\nthree\n")


def read_setup(cwd, outside):
    with open(os.path.join(cwd, "r.txt"), "w") as f:
        f.write("data\n")
    with open(os.path.join(outside, "r.txt"), "w") as f:
        f.write("outside data\n")


EDIT = 'Edit. MOCK_CALL Edit {"file_path":"CWD/e.txt","old_string":"two","new_string":"TWO"}'


def interrupt_pending(p, m, cwd):
    time.sleep(0.5)
    p.note("interrupt while can_use_tool is pending")
    p.send({"type": "control_request", "request_id": "int1", "request": {"subtype": "interrupt"}})
    i, r = p.wait(lambda x: x.get("type") == "result", timeout=10, what="result of the interrupted turn")
    time.sleep(1)
    p.note("answering the cancelled request late (allow), then a second turn")
    p.send({"type": "control_response", "response": {"subtype": "success", "request_id": m["request_id"],
                                                     "response": allow(m)}})
    time.sleep(1)
    p.send({"type": "user", "message": {"role": "user", "content": "Second turn. MOCK_ANSWER second-turn-ok"},
            "parent_tool_use_id": None, "session_id": ""})
    p.wait(lambda x: x.get("type") == "result" and x.get("result") == "second-turn-ok", timeout=30,
           what="second turn's result")


def never(req):
    return None


def late(req):
    time.sleep(5)
    return allow(req)


def change_then_allow(p, m, cwd):
    with open(os.path.join(cwd, "e.txt"), "w") as f:
        f.write("one\nSOMEONE ELSE\nthree\n")
    p.note("e.txt changed on disk while the request was pending")


def session_rule(req):
    return allow(req, updatedPermissions=req["request"].get("permission_suggestions") or [])


CASES = {
    # which calls ask, default mode, no ask rules
    "write-cwd-allow": dict(prompt=W(), responder=allow),
    "write-cwd-allow-noinput": dict(prompt=W(), responder=lambda r: {"behavior": "allow"}),
    "write-cwd-allow-changed-input": dict(prompt=W(), responder=lambda r: {
        "behavior": "allow", "updatedInput": dict(r["request"]["input"], content="CHANGED BY HUB\n")}),
    "write-cwd-deny": dict(prompt=W(), responder=deny),
    "write-cwd-deny-interrupt": dict(prompt=W(), responder=lambda r: deny(r, interrupt=True)),
    "write-outside-allow": dict(prompt=W("OUTSIDE/w.txt"), responder=allow),
    "write-relative-allow": dict(prompt=W("rel.txt"), responder=allow),
    "edit-cwd-allow": dict(prompt=EDIT, responder=allow, setup=edit_setup),
    "read-cwd": dict(prompt='Read. MOCK_CALL Read {"file_path":"CWD/r.txt"}', responder=allow, setup=read_setup),
    "read-outside": dict(prompt='Read. MOCK_CALL Read {"file_path":"OUTSIDE/r.txt"}', responder=allow, setup=read_setup),
    "bash-write-allow": dict(prompt=bash("printf x > b.txt"), responder=allow),
    "bash-write-deny": dict(prompt=bash("printf x > b.txt"), responder=deny),
    "bash-echo": dict(prompt=bash("echo hi"), responder=allow),
    # ask rules for every tool
    "askall-bash-echo": dict(prompt=bash("echo hi"), responder=allow, settings=ASK_ALL),
    "askall-read-cwd": dict(prompt='Read. MOCK_CALL Read {"file_path":"CWD/r.txt"}', responder=allow,
                            setup=read_setup, settings=ASK_ALL),
    "askall-write-cwd-allow": dict(prompt=W(), responder=allow, settings=ASK_ALL),
    # other modes
    "dontask-write": dict(prompt=W(), responder=allow, mode="dontAsk"),
    "dontask-askall-write": dict(prompt=W(), responder=allow, mode="dontAsk", settings=ASK_ALL),
    "dontask-askall-bash": dict(prompt=bash("printf x > b.txt"), responder=allow, mode="dontAsk", settings=ASK_ALL),
    "acceptedits-write-cwd": dict(prompt=W(), responder=allow, mode="acceptEdits"),
    "acceptedits-write-outside": dict(prompt=W("OUTSIDE/w.txt"), responder=allow, mode="acceptEdits"),
    "acceptedits-bash-write": dict(prompt=bash("printf x > b.txt"), responder=allow, mode="acceptEdits"),
    "acceptedits-askall-write-cwd": dict(prompt=W(), responder=allow, mode="acceptEdits", settings=ASK_ALL),
    "acceptedits-askwrite-bash-echo": dict(prompt=bash("echo hi"), responder=allow, mode="acceptEdits",
                                           settings=json.dumps({"permissions": {"ask": ["Write"]}})),
    "write-existing-allow": dict(prompt=W(), responder=allow, setup=lambda c, o: open(os.path.join(c, "w.txt"), "w").write("old\n")),
    # timing
    "late-allow-5s": dict(prompt=W(), responder=late),
    "no-answer": dict(prompt=W(), responder=never, wait_result=int(os.environ.get("NO_ANSWER_S", "120"))),
    "interrupt-pending": dict(prompt=W(), responder=never, after_request=interrupt_pending, wait_result=40),
    "edit-changed-before-allow": dict(prompt=EDIT, responder=allow, setup=edit_setup, after_request=change_then_allow),
    # session grants: MOCK_TOOLLOOP repeats Bash `echo mock-tool-ok`
    "loop-allow-once": dict(prompt="Loop. MOCK_TOOLLOOP", responder=allow, settings=ASK_ALL, loop_seconds=6),
    "loop-allow-with-suggestions": dict(prompt="Loop. MOCK_TOOLLOOP", responder=session_rule, settings=ASK_ALL,
                                        loop_seconds=6),
    "loop-allow-addrule-session": dict(prompt="Loop. MOCK_TOOLLOOP", settings=ASK_ALL, loop_seconds=6, responder=lambda r: allow(
        r, updatedPermissions=[{"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow",
                                "destination": "session"}])),
    "loop-allow-removeask-session": dict(prompt="Loop. MOCK_TOOLLOOP", settings=ASK_ALL, loop_seconds=6, responder=lambda r: allow(
        r, updatedPermissions=[{"type": "removeRules", "rules": [{"toolName": "Bash"}], "behavior": "ask",
                                "destination": "session"}])),
    "loop-allow-removeask-cliarg": dict(prompt="Loop. MOCK_TOOLLOOP", settings=ASK_ALL, loop_seconds=6, responder=lambda r: allow(
        r, updatedPermissions=[{"type": "removeRules", "rules": [{"toolName": "Bash"}], "behavior": "ask",
                                "destination": "cliArg"}])),
    # echoing the suggestions back: localSettings lands in CWD/.claude/settings.local.json
    "bash-write-allow-suggestions": dict(prompt=bash("printf x > b.txt"), responder=session_rule),
    "write-cwd-allow-suggestions": dict(prompt=W(), responder=session_rule),
}

if __name__ == "__main__":
    mock = sys.argv[1]
    names = sys.argv[2:] or list(CASES)
    for n in names:
        run(mock, n, **CASES[n])
    with open(os.path.join(OUT, "summary.txt" if len(sys.argv) == 2 else "summary-%s.txt" % "-".join(names)), "w") as f:
        f.write("\n".join(SUMMARY) + "\n")
