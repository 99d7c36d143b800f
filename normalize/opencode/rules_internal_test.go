package opencode

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Every row of textRules takes its own example first, and classifyText
// gives the row's bin and reason.
func TestTextRules(t *testing.T) {
	t.Parallel()
	for _, p := range normalize.CheckRules(textRules, func(text string) (events.Bin, events.Reason) {
		if e := classifyText(text); e != nil {
			return e.Bin, e.Reason
		}
		return "", ""
	}) {
		t.Error(p)
	}
}

// The log lines of hub's --print-logs: a failed call is a retry notice of
// its class; auth and quota stop the run at once unless fail-fast is off;
// the cause logged under an error event's ref explains it; an echoed config
// file is not passed on.
func TestDecodeStderr(t *testing.T) {
	t.Parallel()
	streamErr := func(msg string) string {
		return `timestamp=2026-12-01T22:30:16.372Z level=ERROR run=2919ed0b message="stream error" providerID=mock modelID=m session.id=ses_1 small=false agent=build mode=primary error.error="AI_APICallError: ` + msg + `"`
	}
	tests := []struct {
		line     string
		failFast bool
		reason   events.Reason
		abort    bool
	}{
		{streamErr(`Cannot connect to API: Unable to connect. Is the computer able to access the url?`), true, events.ReasonNetwork, false},
		{streamErr(`Rate limit reached for m. Please try again in 20s.`), true, events.ReasonRateLimit, false},
		{streamErr(`Internal server error`), true, events.ReasonServer, false},
		{streamErr(`You exceeded your current quota, please check your plan and billing details.`), true, events.ReasonQuota, true},
		{streamErr(`You exceeded your current quota, please check your plan and billing details.`), false, events.ReasonQuota, false},
		// An error sent inside the stream, logged field by field
		// (1.18.33, testdata/opencode/streamerror-logs).
		{`timestamp=2026-12-03T18:31:07.492Z level=ERROR run=a41365e0 message="stream error" providerID=mock modelID=mock-model session.id=ses_1 small=false agent=build mode=primary error.error.message="The server had an error while processing your request (mid-stream)." error.error.type=server_error error.error.code=internal_error`,
			true, events.ReasonServer, false},
	}
	for _, tt := range tests {
		d := New("", tt.failFast)
		out, took := d.DecodeStderr(nil, tt.line)
		if !took || len(out) != 1 {
			t.Fatalf("%q: took %v, %d events", tt.line, took, len(out))
		}
		n, ok := out[0].(events.Notice)
		if !ok || n.Kind != events.NoticeRetry || d.retrying == nil || d.retrying.Reason != tt.reason {
			t.Errorf("%q: %+v, retrying %v; want a retry notice of %s", tt.line, out[0], d.retrying, tt.reason)
		}
		if got := d.Status().Abort != nil; got != tt.abort {
			t.Errorf("%q (fail-fast %v): abort %v, want %v", tt.line, tt.failFast, got, tt.abort)
		}
	}
	// The title agent's calls, calls OpenCode does not retry (its error
	// event follows: a 401 stopped here lost its status and session) and
	// other levels are not taken.
	d := New("", true)
	for _, l := range []string{
		streamErr(`Incorrect API key provided: \"x\"`),
		streamErr(`This model's maximum context length is 128000 tokens`),
		`timestamp=x level=ERROR message="stream error" small=true error.error="AI_APICallError: boom"`,
		// a 400 sent inside the stream, which OpenCode does not retry
		`timestamp=x level=ERROR message="stream error" small=false error.error.message="The 'mock-model' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again." error.error.type=invalid_request_error error.error.param=model error.error.code=null`,
		`timestamp=x level=INFO message="stream error" small=false error.error="AI_APICallError: boom"`,
		"Error: something else",
	} {
		if _, took := d.DecodeStderr(nil, l); took {
			t.Errorf("%q was taken", l)
		}
	}
	// An echoed config file: one notice for all of it, no line of it.
	var got []events.Body
	// Under "--- Errors ---" the broken line is quoted again, with a
	// caret: those lines go too; the error itself is a stderr notice.
	for _, l := range []string{"--- JSONC Input ---", `{"apiKey": "mysecret42"`, `}`, "--- Errors ---"} {
		var took bool
		if got, took = d.DecodeStderr(got, l); !took {
			t.Errorf("%q not taken", l)
		}
	}
	if len(got) != 1 || got[0].(events.Notice).Message != "opencode printed its config file here (2 lines, not shown: it may hold API keys)" {
		t.Errorf("config echo: %+v", got)
	}
	if _, took := d.DecodeStderr(nil, "CommaExpected at line 1, column 23"); took {
		t.Error("the parse error itself was taken: it is the one line worth a stderr notice")
	}
	for _, l := range []string{`   Line 1:  {"apiKey": "mysecret42"`, "                       ^", "--- End ---"} {
		if out, took := d.DecodeStderr(nil, l); !took || len(out) != 0 {
			t.Errorf("%q: took %v, %v; want it dropped", l, took, out)
		}
	}
	if _, took := d.DecodeStderr(nil, "Error: something after the echo"); took {
		t.Error("a line after --- End --- was taken")
	}
	// A schema error quotes the value it got: masked.
	out, _ := d.DecodeStderr(nil, `↳ Expected boolean | undefined, got "yes-mysecret42" provider.mock.models.m.tool_call`)
	if len(out) != 1 || strings.Contains(out[0].(events.Notice).Message, "mysecret42") {
		t.Errorf("schema error: %+v, want one notice without the value", out)
	}
	one := 1
	e := Fallback(normalize.End{ExitCode: &one, Stderr: "Error: Configuration is invalid at /c/opencode.json\n" +
		`↳ Expected boolean | undefined, got "yes-mysecret42" provider.mock.models.m.tool_call` + "\n"}, "", false)
	if e.Reason != events.ReasonNotConfigured || !strings.Contains(e.Message, "/c/opencode.json") || strings.Contains(e.Message, "mysecret42") {
		t.Errorf("schema-invalid config: %s/%s %q, want not_configured naming the file, without the value", e.Bin, e.Reason, e.Message)
	}
	// The cause logged under the error event's ref explains it.
	d = New("", true)
	d.DecodeStderr(nil, `timestamp=x level=ERROR run=1 message=failed ref=err_1 error="ProviderModelNotFoundError: Model not found: nope/x." cause="…"`)
	d.Decode(nil, []byte(`{"type":"error","sessionID":"ses_1","error":{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details.","ref":"err_1"}}}`))
	if o := d.Outcome(normalize.End{ExitCode: &one}); o.Error == nil || o.Error.Reason != events.ReasonBadModel {
		t.Errorf("UnknownError with a logged cause: %+v, want bad_model", o.Error)
	}
}

// A stderr tail (its last 64 KiB) that starts inside OpenCode's echo of a
// config file quotes nothing of it; other spellings of a schema error's
// value are masked too.
func TestFallbackConfigEchoCut(t *testing.T) {
	t.Parallel()
	one := 1
	for _, tail := range []string{
		`{"provider":{"mock":{"options":{"apiKey": "PLAINSECRETxyz987" "baseURL": "x"}}}}` + "\n--- Errors ---\nCommaExpected at line 1, column 60\n   Line 1:  {\"apiKey\": \"PLAINSECRETxyz987\" \"baseURL\"\n          ^\n--- End ---\n",
		"   Line 1:  {\"apiKey\": \"PLAINSECRETxyz987\"\n          ^\n--- End ---\n",
		"1 | \"apiKey\": \"PLAINSECRETxyz987\"\n^ PLAINSECRETxyz987\n--- End ---\n",
		"Error: Configuration is invalid at /c.json\n↳ Expected boolean | undefined, got 'PLAINSECRETxyz987' x.y\n",
		"Error: Configuration is invalid at /c.json\n│ ↳ Expected number, got PLAINSECRETxyz987\n",
	} {
		e := Fallback(normalize.End{ExitCode: &one, Stderr: tail}, "", false)
		if strings.Contains(e.Message, "PLAINSECRET") {
			t.Errorf("%q: message %q quotes the config", tail, e.Message)
		}
		// A live run sees the echo's markers (DecodeStderr drops what is
		// between them: TestDecodeStderr); a value a schema error quotes
		// is masked wherever the line is.
		if !strings.Contains(tail, "got ") {
			continue
		}
		d := New("", true)
		for line := range strings.Lines(tail) {
			line = strings.TrimSpace(line)
			out, took := d.DecodeStderr(nil, line)
			if !took && strings.Contains(line, "PLAINSECRET") {
				t.Errorf("%q was not taken: it would go out as it is", line)
			}
			for _, b := range out {
				if n, ok := b.(events.Notice); ok && strings.Contains(n.Message, "PLAINSECRET") {
					t.Errorf("%q: notice %q quotes the config", line, n.Message)
				}
			}
		}
	}
}
