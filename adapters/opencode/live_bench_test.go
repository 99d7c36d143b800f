package opencode_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/hubtest"
)

// TestSessionLatency is a measurement (HUB_BENCH_SESSION=<pairs>): a
// follow-up turn in a live session (`opencode acp` through hub) against a
// fresh run resuming it.
func TestSessionLatency(t *testing.T) { hubtest.SessionLatency(t, agent) }

// TestACPLatency is a measurement (HUB_BENCH_ACP=<prompts>): hub acp's
// follow-up prompts in one ACP session.
func TestACPLatency(t *testing.T) { hubtest.ACPLatency(t, agent) }

// TestLiveProtocolLatency is a measurement, when HUB_BENCH_OPENCODE_LIVE
// names a number of turns (it skips otherwise): the two ways OpenCode
// 1.18.33 holds a session in one process, driven by hand, without hub,
// against the mock server, each warmed by a first turn, their follow-up
// turns alternated. `opencode acp`: session/prompt written on its stdin to
// the first session/update on its stdout (its first agent_message_chunk).
// `opencode serve`: POST /session/{id}/prompt_async to the first event of
// the session on GET /event (the user message's echo), and to the first
// message.part.delta (the answer's first text, as ACP's first update);
// each turn waits for session.idle. It logs the medians and the CPU model;
// hub chose acp (adapters/opencode/live.go says why).
//
//	HUB_BENCH_OPENCODE_LIVE=20 go test -count=1 -run TestLiveProtocolLatency -v ./adapters/opencode
func TestLiveProtocolLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HUB_BENCH_OPENCODE_LIVE"))
	if n <= 0 {
		t.Skip("a measurement: set HUB_BENCH_OPENCODE_LIVE=<turns>")
	}
	bin := hubtest.Bin(t, agent.Name)
	acp := startACP(t, bin)
	serve := startServe(t, bin)
	acp.turn(t, "warm up MOCK_TEXT")
	serve.turn(t, "warm up MOCK_TEXT")
	var acpFirst, serveFirst, serveText []time.Duration
	for i := range n {
		prompt := fmt.Sprintf("follow-up %d MOCK_TEXT", i)
		acpFirst = append(acpFirst, acp.turn(t, prompt))
		first, text := serve.turn(t, prompt)
		serveFirst, serveText = append(serveFirst, first), append(serveText, text)
	}
	med := func(d []time.Duration) string {
		s := slices.Clone(d)
		slices.Sort(s)
		return fmt.Sprintf("%s (%s–%s)", s[len(s)/2].Round(time.Millisecond), s[0].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	}
	t.Logf("opencode 1.18.33, %d follow-up turns alternated, on %s: acp: prompt to first session/update median %s; serve: prompt_async to the session's first event %s, to the first message.part.delta %s",
		n, cpuModel(), med(acpFirst), med(serveFirst), med(serveText))
}

// cpuModel is /proc/cpuinfo's first model name.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// startOpenCode starts bin with args in a fresh mock environment, in a
// process group of its own, killed when t ends.
func startOpenCode(t *testing.T, bin string, args ...string) (*exec.Cmd, *hubtest.Env) {
	t.Helper()
	e := agent.Prepare(t, hubtest.Setup{})
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.Work
	cmd.Env = append(append(os.Environ(), e.Env...), "PWD="+e.Work, "OPENCODE_DISABLE_AUTOUPDATE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = io.Discard
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})
	return cmd, e
}

// acpProc is `opencode acp` driven by hand.
type acpProc struct {
	in   io.Writer
	out  *bufio.Reader
	id   int
	sess string
}

func startACP(t *testing.T, bin string) *acpProc {
	t.Helper()
	cmd, e := startOpenCode(t, bin, "acp")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &acpProc{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	p.call(t, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	p.sess = gjson.GetBytes(p.call(t, "session/new", map[string]any{"cwd": e.Work, "mcpServers": []any{}}), "result.sessionId").Str
	return p
}

// send writes a request and returns its id.
func (p *acpProc) send(t *testing.T, method string, params any) int {
	t.Helper()
	p.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": method, "params": params})
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	return p.id
}

// call sends a request and returns its answer, skipping what comes before.
func (p *acpProc) call(t *testing.T, method string, params any) []byte {
	t.Helper()
	id := p.send(t, method, params)
	for {
		line := p.line(t)
		if r := gjson.GetBytes(line, "id"); r.Exists() && int(r.Int()) == id && !gjson.GetBytes(line, "method").Exists() {
			return line
		}
	}
}

func (p *acpProc) line(t *testing.T) []byte {
	t.Helper()
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("opencode acp: %v", err)
	}
	return line
}

// turn sends prompt and returns the time to the first session/update.
func (p *acpProc) turn(t *testing.T, prompt string) time.Duration {
	t.Helper()
	start := time.Now()
	id := p.send(t, "session/prompt", map[string]any{"sessionId": p.sess, "prompt": []any{map[string]any{"type": "text", "text": prompt}}})
	var first time.Duration
	for {
		line := p.line(t)
		if first == 0 && gjson.GetBytes(line, "method").Str == "session/update" {
			first = time.Since(start)
		}
		if r := gjson.GetBytes(line, "id"); r.Exists() && int(r.Int()) == id {
			if s := gjson.GetBytes(line, "result.stopReason").Str; s != "end_turn" {
				t.Fatalf("opencode acp: prompt answered %s", line)
			}
			return first
		}
	}
}

// serveProc is `opencode serve` driven by hand: its event stream read on a
// goroutine, each event with the time it came.
type serveProc struct {
	url    string
	sess   string
	events chan serveEvent
}

type serveEvent struct {
	at   time.Time
	data []byte
}

func startServe(t *testing.T, bin string) *serveProc {
	t.Helper()
	cmd, _ := startOpenCode(t, bin, "serve", "--port=0", "--hostname=127.0.0.1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	p := &serveProc{events: make(chan serveEvent, 4096)}
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
			p.url = strings.TrimSpace(url)
			break
		}
	}
	if p.url == "" {
		t.Fatal("opencode serve printed no URL")
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	resp, err := http.Get(p.url + "/event")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		r := bufio.NewReaderSize(resp.Body, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(p.events)
				return
			}
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				p.events <- serveEvent{at: time.Now(), data: data}
			}
		}
	}()
	p.sess = gjson.GetBytes(p.post(t, "/session", map[string]any{}), "id").Str
	if p.sess == "" {
		t.Fatal("opencode serve: no session id")
	}
	return p
}

func (p *serveProc) post(t *testing.T, path string, body any) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(p.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("opencode serve: POST %s: %s %s", path, resp.Status, out)
	}
	return out
}

// turn posts prompt and waits for session.idle; it returns the times to
// the session's first event and to its first message.part.delta.
func (p *serveProc) turn(t *testing.T, prompt string) (first, text time.Duration) {
	t.Helper()
	start := time.Now()
	p.post(t, "/session/"+p.sess+"/prompt_async", map[string]any{"parts": []any{map[string]any{"type": "text", "text": prompt}}})
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				t.Fatal("opencode serve: the event stream ended")
			}
			if gjson.GetBytes(ev.data, "properties.sessionID").Str != p.sess || ev.at.Before(start) {
				continue
			}
			typ := gjson.GetBytes(ev.data, "type").Str
			if first == 0 {
				first = ev.at.Sub(start)
			}
			if text == 0 && typ == "message.part.delta" {
				text = ev.at.Sub(start)
			}
			if typ == "session.idle" {
				return first, text
			}
		case <-timeout:
			t.Fatal("opencode serve: no session.idle")
		}
	}
}
