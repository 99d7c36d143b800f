"""pi 0.73.1 --mode rpc with an approval extension (scripts/pi-gate.ts) against mockllm
(testdata/approvals/pi). One process per recording.

usage: python3 pi.py MOCKLLM_URL [case ...]
argv: pi --mode rpc --provider mock --model mock-model --tools read,bash,edit,write --no-extensions
      -e scripts/pi-gate.ts --offline --session-dir <agentdir>/sessions
cwd /tmp/appr/work/pi-<case>; outside dir /var/tmp/appr/outside/pi-<case>;
env from scripts/mock-env.sh under /var/tmp/appr/env/pi-<case>.
"""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec  # noqa: E402

OUT = os.path.join(rec.ROOT, "pi")
GATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pi-gate.ts")
SUMMARY = []


def say(s):
    print(s)
    SUMMARY.append(s)


def confirm(ok):
    return lambda req: {"type": "extension_ui_response", "id": req["id"], "confirmed": ok}


def cancelled(req):
    return {"type": "extension_ui_response", "id": req["id"], "cancelled": True}


def select(value):
    return lambda req: {"type": "extension_ui_response", "id": req["id"], "value": value}


def never(req):
    return None


def run(mock, name, prompt, responder, setup=None, during=None, gate_env=None, wait=60):
    cwd = "/tmp/appr/work/pi-" + name
    outside = "/var/tmp/appr/outside/pi-" + name
    for d in (cwd, outside):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    envd = "/var/tmp/appr/env/pi-" + name
    shutil.rmtree(envd, ignore_errors=True)
    proxy = rec.ModelLog(mock)
    env = rec.base_env(rec.mock_env("pi", proxy.url, envd))
    env.update(gate_env or {})
    agent = env["PI_CODING_AGENT_DIR"]
    argv = [os.path.join(rec.BIN, "pi"), "--mode", "rpc", "--provider", "mock", "--model", "mock-model",
            "--tools", "read,bash,edit,write", "--no-extensions", "-e", GATE, "--offline",
            "--session-dir", os.path.join(agent, "sessions")]
    prompt = prompt.replace("CWD", cwd).replace("OUTSIDE", outside)
    if setup:
        setup(cwd)
    p = rec.Proc(OUT, name, argv, env, cwd)
    if gate_env:
        p.note("gate env %s" % json.dumps(gate_env))
    p.send({"id": "p1", "type": "prompt", "message": prompt})
    reqs, pos, end = [], 0, None
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        i, m = p.wait(lambda m: m.get("type") in ("agent_end", "extension_ui_request") and m.get("method") not in (
            "notify", "setStatus", "setWidget", "setTitle", "set_editor_text"),
                      timeout=left, start=pos, what="extension_ui_request or agent_end")
        if m is None:
            break
        pos = i + 1
        if m["type"] == "agent_end":
            end = m
            break
        reqs.append(m)
        if during:
            during(p, m, cwd)
        r = responder(m)
        if r is not None:
            p.send(r)
    time.sleep(0.3)
    files = {}
    for d in (cwd, outside):
        for f in sorted(os.listdir(d)):
            files[os.path.join(d, f)] = rec.disk(os.path.join(d, f))
    ends = [x for x in p.lines if x and x.get("type") == "tool_execution_end"]
    p.close_stdin()
    rc = p.finish()
    proxy.save(p.base + ".model.jsonl")
    proxy.close()
    results = [c for e in proxy.entries for c in e["conversation"] if "result" in c]
    last = None
    if end:
        msgs = [x for x in end.get("messages", []) if x.get("role") == "assistant"]
        if msgs:
            last = {"stopReason": msgs[-1].get("stopReason"),
                    "text": "".join(c.get("text", "") for c in msgs[-1].get("content", []) if c.get("type") == "text")}
    say("\n### %s%s\n- prompt: %s\n- requests (%d): %s\n- tool_execution_end: %s\n- agent_end: %s\n- files after: %s\n- model got: %s\n- exit %s" % (
        name, " (gate env %s)" % json.dumps(gate_env) if gate_env else "", prompt, len(reqs),
        "\n    ".join([""] + [json.dumps(r) for r in reqs[:3]]),
        json.dumps([{k: e.get(k) for k in ("toolName", "isError", "result")} for e in ends]),
        json.dumps(last) if end else None, json.dumps(files), json.dumps(results), rc))


def W(path="CWD/w.txt"):
    return 'Write a file. MOCK_CALL write {"path":"%s","content":"hello\\n"}' % path


def bash(cmd):
    return 'Run it. MOCK_CALL bash {"command":%s}' % json.dumps(cmd)


EDIT = 'Edit. MOCK_CALL edit {"path":"CWD/e.txt","edits":[{"oldText":"two","newText":"TWO"}]}'


def edit_setup(cwd):
    with open(os.path.join(cwd, "e.txt"), "w") as f:
        f.write("one\ntwo\nthree\n")


def change(p, m, cwd):
    with open(os.path.join(cwd, "e.txt"), "w") as f:
        f.write("one\nSOMEONE ELSE\nthree\n")
    p.note("e.txt changed on disk while the request was pending")


def late(req):
    time.sleep(5)
    return confirm(True)(req)


def abort_pending(p, m, cwd):
    time.sleep(0.5)
    p.note("abort while the confirm is pending")
    p.send({"id": "a1", "type": "abort"})
    time.sleep(3)
    p.note("answering the pending confirm late (true) after the abort")


CASES = {
    "write-confirm-true": dict(prompt=W(), responder=confirm(True)),
    "write-confirm-false": dict(prompt=W(), responder=confirm(False)),
    "write-cancelled": dict(prompt=W(), responder=cancelled),
    "write-outside-true": dict(prompt=W("OUTSIDE/w.txt"), responder=confirm(True)),
    "edit-confirm-true": dict(prompt=EDIT, responder=confirm(True), setup=edit_setup),
    "bash-write-true": dict(prompt=bash("printf x > b.txt"), responder=confirm(True)),
    "bash-write-false": dict(prompt=bash("printf x > b.txt"), responder=confirm(False)),
    "read-true": dict(prompt='Read. MOCK_CALL read {"path":"CWD/e.txt"}', responder=confirm(True), setup=edit_setup),
    "select-allow": dict(prompt=W(), responder=select("allow"), gate_env={"HUB_GATE_SELECT": "1"}),
    "late-true-5s": dict(prompt=W(), responder=late),
    "edit-changed-before-true": dict(prompt=EDIT, responder=confirm(True), setup=edit_setup, during=change),
    "timeout-3s": dict(prompt=W(), responder=never, gate_env={"HUB_GATE_TIMEOUT_MS": "3000"}, wait=30),
    "abort-pending": dict(prompt=W(), responder=confirm(True), during=abort_pending, wait=30),
    "abort-pending-signal": dict(prompt=W(), responder=confirm(True), during=abort_pending, wait=30,
                                 gate_env={"HUB_GATE_SIGNAL": "1"}),
    "no-answer": dict(prompt=W(), responder=never, wait=int(os.environ.get("NO_ANSWER_S", "150"))),
}

if __name__ == "__main__":
    mock = sys.argv[1]
    names = sys.argv[2:] or list(CASES)
    for n in names:
        run(mock, n, **CASES[n])
    with open(os.path.join(OUT, "summary.txt" if len(sys.argv) == 2 else "summary-%s.txt" % "-".join(names)), "w") as f:
        f.write("\n".join(SUMMARY) + "\n")
