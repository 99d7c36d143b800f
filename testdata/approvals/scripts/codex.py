"""Codex 0.169.0 app-server approvals against mockllm (testdata/approvals/codex).

usage: python3 codex.py MOCKLLM_URL [recording ...]
Recordings: matrix (four approvalPolicy x sandbox processes), session-cache,
no-answer, interrupt-pending, late-and-changed, escalate.
Work dirs: /tmp/appr/work/codex-<name> (cwd), /var/tmp/appr/outside/codex-<name>
(a dir outside cwd and outside /tmp), env from scripts/mock-env.sh under
/var/tmp/appr/env/codex-<name>.
"""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec  # noqa: E402

OUT = os.path.join(rec.ROOT, "codex")
CODEX = os.path.join(rec.MODS, "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
SUMMARY = []


def say(s):
    print(s)
    SUMMARY.append(s)


class App:
    def __init__(self, mock, name):
        self.name = name
        self.cwd = "/tmp/appr/work/codex-" + name
        self.outside = "/var/tmp/appr/outside/codex-" + name
        for d in (self.cwd, self.outside):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        envd = "/var/tmp/appr/env/codex-" + name
        shutil.rmtree(envd, ignore_errors=True)
        self.proxy = rec.ModelLog(mock)
        env = rec.base_env(rec.mock_env("codex", self.proxy.url, envd))
        self.p = rec.Proc(OUT, name, [CODEX, "app-server"], env, self.cwd)
        self.next_id = 10
        self.p.send({"id": 1, "method": "initialize",
                     "params": {"clientInfo": {"name": "hub", "version": "x"}, "capabilities": None}})
        self.p.wait(lambda m: m.get("id") == 1 and "method" not in m, what="initialize")
        self.p.send({"method": "initialized"})
        self.pos = 0

    def rpc(self, method, params, wait=True):
        i = self.next_id
        self.next_id += 1
        self.p.send({"id": i, "method": method, "params": params})
        if not wait:
            return i, None
        _, m = self.p.wait(lambda m: m.get("id") == i and "method" not in m, what=method)
        return i, m

    def thread(self, policy, sandbox):
        _, m = self.rpc("thread/start", {"cwd": self.cwd, "approvalPolicy": policy, "sandbox": sandbox,
                                         "ephemeral": True})
        if "error" in m:
            raise SystemExit("thread/start: %s" % m)
        return m["result"]["thread"]["id"]

    def turn(self, tid, text):
        _, m = self.rpc("turn/start", {"threadId": tid, "input": [{"type": "text", "text": text, "text_elements": []}]})
        return m["result"]["turn"]["id"]

    def next_event(self, tid, timeout=30):
        """The next server request or turn/completed of thread tid."""
        def pred(m):
            if "method" not in m:
                return False
            p = m.get("params") or {}
            if p.get("threadId") not in (tid, None):
                return False
            return "id" in m or m["method"] == "turn/completed"
        i, m = self.p.wait(pred, timeout=timeout, start=self.pos, what="request or turn/completed")
        if i is not None:
            self.pos = i + 1
        return m

    def answer(self, req, decision):
        self.p.send({"id": req["id"], "result": {"decision": decision}})

    def close(self):
        self.p.close_stdin()
        rc = self.p.finish()
        self.proxy.save(self.p.base + ".model.jsonl")
        self.proxy.close()
        return rc


def tool_result(app, since):
    """The tool results the model got in requests made since index since."""
    outs = []
    for e in app.proxy.entries[since:]:
        for c in e["conversation"]:
            if "result" in c:
                outs.append(c["output"])
    return outs[-1] if outs else None


def brief_req(m):
    p = dict(m["params"])
    for k in ("threadId", "turnId", "startedAtMs"):
        p.pop(k, None)
    return "%s %s" % (m["method"], json.dumps(p))


def case(app, policy, sandbox, label, prompt, decision, target):
    """One thread, one turn: answer every approval request with decision; report."""
    tid = app.thread(policy, sandbox)
    app.p.note("case %s: policy=%s sandbox=%s decision=%s target=%s" % (label, policy, sandbox, decision, target))
    since = len(app.proxy.entries)
    app.turn(tid, prompt)
    reqs = []
    status = None
    while True:
        m = app.next_event(tid)
        if m is None:
            status = "TIMEOUT"
            break
        if m["method"] == "turn/completed":
            status = m["params"]["turn"]["status"]
            break
        reqs.append(m)
        app.answer(m, decision)
    time.sleep(0.3)
    on_disk = rec.disk(target)
    app.p.note("case %s: requests=%d turn=%s on_disk=%r" % (label, len(reqs), status, on_disk))
    say("- %s [%s/%s] decision=%s: %s; turn %s; on disk: %r; model got: %r" % (
        label, policy, sandbox, json.dumps(decision),
        "; ".join(brief_req(r) for r in reqs) or "NO REQUEST", status, on_disk,
        tool_result(app, since)))


def patch_add(path, text="hello"):
    return "*** Begin Patch\\n*** Add File: %s\\n+%s\\n*** End Patch" % (path, text)


def matrix(mock):
    for policy in ("untrusted", "on-request"):
        for sandbox in ("read-only", "workspace-write"):
            name = "matrix-%s-%s" % (policy, sandbox)
            app = App(mock, name)
            say("\n## %s (cwd %s, outside dir %s)" % (name, app.cwd, app.outside))
            for d in ("accept", "acceptForSession", "decline", "cancel"):
                f = "sh-%s.txt" % d
                case(app, policy, sandbox, "shell " + d,
                     'Write a file. MOCK_CALL exec_command {"cmd":"printf x > %s"}' % f, d, os.path.join(app.cwd, f))
            for d in ("accept", "acceptForSession", "decline", "cancel"):
                f = "pt-%s.txt" % d
                case(app, policy, sandbox, "patch " + d,
                     "Write a file. MOCK_CALL apply_patch " + patch_add(f), d, os.path.join(app.cwd, f))
            f = os.path.join(app.outside, "sh-out.txt")
            case(app, policy, sandbox, "shell outside accept",
                 'Write outside. MOCK_CALL exec_command {"cmd":"printf x > %s"}' % f, "accept", f)
            f = os.path.join(app.outside, "pt-out.txt")
            case(app, policy, sandbox, "patch outside accept",
                 "Write outside. MOCK_CALL apply_patch " + patch_add(f), "accept", f)
            f = os.path.join(app.cwd, "read.txt")
            with open(f, "w") as fh:
                fh.write("data\n")
            case(app, policy, sandbox, "shell read (cat) accept",
                 'Read a file. MOCK_CALL exec_command {"cmd":"cat read.txt"}', "accept", f)
            say("exit %s" % app.close())


def escalate(mock):
    """on-request: the model asks to run outside the sandbox (sandbox_permissions require_escalated)."""
    app = App(mock, "escalate")
    say("\n## escalate (cwd %s)" % app.cwd)
    for sandbox in ("read-only", "workspace-write"):
        for d in ("accept", "decline", "cancel"):
            f = "esc-%s-%s.txt" % (sandbox, d)
            case(app, "on-request", sandbox, "escalated shell " + d,
                 'Write a file. MOCK_CALL exec_command {"cmd":"printf x > %s","sandbox_permissions":"require_escalated",'
                 '"justification":"Write %s for the test?"}' % (f, f), d, os.path.join(app.cwd, f))
        f = os.path.join(app.outside, "esc-out-%s.txt" % sandbox)
        case(app, "on-request", sandbox, "escalated shell outside accept",
             'Write outside. MOCK_CALL exec_command {"cmd":"printf x > %s","sandbox_permissions":"require_escalated",'
             '"justification":"Write outside?"}' % f, "accept", f)
    say("exit %s" % app.close())


def session_cache(mock):
    """MOCK_TOOLLOOP repeats `echo mock-tool-ok`: is a repeat asked again after accept / acceptForSession?"""
    app = App(mock, "session-cache")
    say("\n## session-cache (cwd %s)" % app.cwd)
    amend = {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["echo", "mock-tool-ok"]}}
    for d in ("accept", "acceptForSession", amend):
        tid = app.thread("untrusted", "read-only")
        app.p.note("loop with decision %s" % d)
        turn = app.turn(tid, "Loop. MOCK_TOOLLOOP")
        asked = 0
        t_end = time.monotonic() + 4
        while time.monotonic() < t_end:
            m = app.next_event(tid, timeout=max(0.1, t_end - time.monotonic()))
            if m is None:
                break
            if m["method"] == "turn/completed":
                break
            asked += 1
            app.answer(m, d)
        runs = sum(1 for x in app.p.lines if x and x.get("method") == "item/completed"
                   and x["params"].get("threadId") == tid and x["params"]["item"].get("type") == "commandExecution")
        app.p.note("loop %s: %d requests, %d commands run in 4 s; interrupting" % (d, asked, runs))
        say("- loop `echo mock-tool-ok` under untrusted/read-only, decision %s: %d approval requests for %d command runs in 4 s"
            % (json.dumps(d), asked, runs))
        app.rpc("turn/interrupt", {"threadId": tid, "turnId": turn})
        while True:
            m = app.next_event(tid, timeout=10)
            if m is None or m["method"] == "turn/completed":
                break
            app.answer(m, "cancel")
        if d == "acceptForSession":
            case(app, "untrusted", "read-only", "same command in a NEW thread after acceptForSession",
                 "Again. MOCK_TOOL", "decline", os.path.join(app.cwd, "none"))
    say("exit %s" % app.close())
    home = "/var/tmp/appr/env/codex-session-cache/codex-home"
    for root, _, fs in os.walk(home):
        for f in fs:
            if f.endswith(".rules") or "rules" in root:
                say("- left in CODEX_HOME: %s: %r" % (os.path.join(root, f), rec.disk(os.path.join(root, f))))


def no_answer(mock, wait_s=int(os.environ.get("NO_ANSWER_S", "150"))):
    app = App(mock, "no-answer")
    say("\n## no-answer (cwd %s): the request is never answered for %d s" % (app.cwd, wait_s))
    tid = app.thread("untrusted", "read-only")
    app.turn(tid, 'Write a file. MOCK_CALL exec_command {"cmd":"printf x > never.txt"}')
    m = app.next_event(tid)
    say("- request: %s" % brief_req(m))
    t0 = time.monotonic()
    later = app.next_event(tid, timeout=wait_s)
    say("- after %d s without an answer: %s; lines since request: %d; never.txt on disk: %r" % (
        int(time.monotonic() - t0), later and later["method"], len(app.p.lines) - app.pos,
        rec.disk(os.path.join(app.cwd, "never.txt"))))
    app.p.note("closing stdin with the request still pending")
    say("exit after stdin closed with the request pending: %s" % app.close())


def interrupt_pending(mock):
    app = App(mock, "interrupt-pending")
    say("\n## interrupt-pending (cwd %s)" % app.cwd)
    for kind, prompt in (("shell", 'Write a file. MOCK_CALL exec_command {"cmd":"printf x > intr.txt"}'),
                         ("patch", "Write a file. MOCK_CALL apply_patch " + patch_add("intr-patch.txt"))):
        tid = app.thread("untrusted", "read-only")
        turn = app.turn(tid, prompt)
        req = app.next_event(tid)
        app.p.note("%s request pending; sending turn/interrupt" % kind)
        start = len(app.p.lines)
        iid, resp = app.rpc("turn/interrupt", {"threadId": tid, "turnId": turn})
        done = app.next_event(tid, timeout=10)
        time.sleep(0.5)
        seen = [rec._brief(json.dumps(x)) for x in app.p.lines[start:] if x]
        say("- %s: request %s; turn/interrupt answered %s; then: %s" % (
            kind, req["method"], json.dumps(resp), ", ".join(seen)))
        app.p.note("answering the stale request %s with accept after the interrupt" % req["id"])
        start = len(app.p.lines)
        app.answer(req, "accept")
        time.sleep(1.5)
        target = os.path.join(app.cwd, "intr.txt" if kind == "shell" else "intr-patch.txt")
        say("  late accept of the interrupted request -> lines: %s; on disk: %r" % (
            [rec._brief(json.dumps(x)) for x in app.p.lines[start:] if x], rec.disk(target)))
    # a new turn on a fresh thread still works
    tid = app.thread("untrusted", "read-only")
    app.turn(tid, "Still there? MOCK_TEXT")
    m = app.next_event(tid)
    say("- a following turn: %s %s" % (m and m["method"], m and m["params"].get("turn", {}).get("status")))
    say("exit %s" % app.close())


def late_and_changed(mock):
    app = App(mock, "late-and-changed")
    say("\n## late-and-changed (cwd %s)" % app.cwd)
    # 1. accepted 5 s late
    tid = app.thread("untrusted", "read-only")
    app.turn(tid, 'Write a file. MOCK_CALL exec_command {"cmd":"printf x > late.txt"}')
    req = app.next_event(tid)
    time.sleep(5)
    app.p.note("accepting after 5 s")
    app.answer(req, "accept")
    m = app.next_event(tid)
    say("- shell accepted after 5 s: turn %s; late.txt: %r" % (m["params"]["turn"]["status"],
                                                              rec.disk(os.path.join(app.cwd, "late.txt"))))
    # 2. an update patch whose target changes on disk before the accept
    for what in ("changed", "deleted"):
        f = os.path.join(app.cwd, "target-%s.txt" % what)
        with open(f, "w") as fh:
            fh.write("one\ntwo\nthree\n")
        tid = app.thread("untrusted", "read-only")
        since = len(app.proxy.entries)
        app.turn(tid, "Edit. MOCK_CALL apply_patch *** Begin Patch\\n*** Update File: target-%s.txt\\n@@\\n one\\n-two\\n+TWO\\n three\\n*** End Patch" % what)
        req = app.next_event(tid)
        started = [x for x in app.p.lines if x and x.get("method") == "item/started"
                   and x["params"].get("threadId") == tid and x["params"]["item"].get("type") == "fileChange"]
        if what == "changed":
            with open(f, "w") as fh:
                fh.write("one\nSOMEONE ELSE\nthree\n")
        else:
            os.remove(f)
        app.p.note("target %s on disk while the approval was pending; accepting" % what)
        app.answer(req, "accept")
        m = app.next_event(tid)
        say("- update patch, target %s before accept: request %s; item/started changes %s; turn %s; file now %r; model got %r" % (
            what, req and req["method"], json.dumps(started[-1]["params"]["item"]["changes"]) if started else None,
            m and m["params"]["turn"]["status"], rec.disk(f), tool_result(app, since)))
    # 3. the same for a shell command whose file changes meanwhile (the command runs on what is there then)
    say("exit %s" % app.close())


def bad_replies(mock):
    """What codex does with a JSON-RPC error reply and an unknown decision."""
    app = App(mock, "bad-replies")
    say("\n## bad-replies (cwd %s)" % app.cwd)
    for label, reply in (("JSON-RPC error reply", {"error": {"code": -32000, "message": "hub: no approver"}}),
                         ("unknown decision", {"result": {"decision": "bogus"}}),
                         ("empty result", {"result": {}})):
        tid = app.thread("untrusted", "read-only")
        f = os.path.join(app.cwd, label.replace(" ", "-") + ".txt")
        since = len(app.proxy.entries)
        app.turn(tid, 'Write a file. MOCK_CALL exec_command {"cmd":"printf x > %s"}' % f)
        req = app.next_event(tid)
        app.p.note("replying with %s" % label)
        app.p.send(dict({"id": req["id"]}, **reply))
        m = app.next_event(tid, timeout=20)
        say("- %s: %s; turn %s; on disk %r; model got %r" % (
            label, json.dumps(reply), m and (m["method"] + " " + str(m["params"].get("turn", {}).get("status"))),
            rec.disk(f), tool_result(app, since)))
        if m and m["method"] != "turn/completed":
            app.answer(m, "cancel")
            app.next_event(tid, timeout=20)
    say("exit %s" % app.close())


ALL = {"bad-replies": bad_replies, "matrix": matrix, "escalate": escalate, "session-cache": session_cache, "no-answer": no_answer,
       "interrupt-pending": interrupt_pending, "late-and-changed": late_and_changed}

if __name__ == "__main__":
    mock = sys.argv[1]
    names = sys.argv[2:] or list(ALL)
    for n in names:
        ALL[n](mock)
    with open(os.path.join(OUT, "summary.txt" if len(sys.argv) == 2 else "summary-%s.txt" % "-".join(names)), "w") as f:
        f.write("\n".join(SUMMARY) + "\n")
