package events_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/hubcli/hub/events"
)

// bodies returns one body of each type appendBody writes field by field,
// built from the fuzzer's values.
func bodies(s string, f float64, n int64, raw []byte) []events.Body {
	code := int(n)
	cost := f
	model := s
	tok := events.Tokens{Input: n, Output: -n, CacheRead: 1, CacheWrite: 2, Reasoning: 3, CostUSD: &cost}
	return []events.Body{
		events.TextDelta{Text: s}, events.Message{Text: s}, events.Reasoning{Text: s},
		events.ToolStarted{CallID: s, Name: s, Kind: events.ToolShell, Input: raw},
		events.ToolStarted{CallID: s, Name: s, Kind: events.ToolShell},
		events.ToolFinished{CallID: s, Name: s, Kind: events.ToolKind(s), Status: events.ToolOK, Output: s, OutputBytes: n, Truncated: n%2 == 0, ExitCode: &code},
		events.ToolFinished{Status: events.ToolError},
		events.Usage{Step: tok, Total: events.Tokens{}, CostSource: events.CostReported, Model: &model},
		events.Usage{Step: tok, Total: tok, CostSource: events.CostUnknown},
		events.Notice{Kind: events.NoticeRetry, Message: s, Data: raw},
		events.Notice{Kind: events.NoticeStderr, Message: s},
	}
}

func checkBodies(t *testing.T, s string, f float64, n int64, raw []byte) {
	for _, b := range bodies(s, f, n, raw) {
		got, gotErr := events.AppendBody([]byte("{"), b)
		want, wantErr := events.AppendBodyReflect([]byte("{"), b)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("AppendBody(%#v) error = %v, want %v (encoding/json)", b, gotErr, wantErr)
		}
		if gotErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("AppendBody(%#v) =\n%s\nwant (encoding/json)\n%s", b, got, want)
		}
	}
}

var encodeSeeds = []struct {
	s   string
	f   float64
	n   int64
	raw string
}{
	{"plain", 0.00321, 42, `{"command":"ls"}`},
	{"esc \" \\ \n \r \t \b \f \x01 \x1f \x7f <>&", 1e-7, -1, ` { "a" : [ 1 , 2 ] } `},
	{"utf8 é 日本 😀 \u2028 \u2029 bad \xff \xe2\x80", 1e21, 0, `"x"`},
	{"", 123456789.125, math.MaxInt64, `null`},
	{"x", math.NaN(), 1, `{`},
	{"x", math.Inf(-1), 1, ``},
	{"x", 5e-324, 1, `{"a":"\u2028"}`},
}

func TestAppendBodyMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range encodeSeeds {
		checkBodies(t, c.s, c.f, c.n, []byte(c.raw))
	}
}

func FuzzAppendBody(f *testing.F) {
	for _, c := range encodeSeeds {
		f.Add(c.s, c.f, c.n, []byte(c.raw))
	}
	f.Fuzz(func(t *testing.T, s string, fl float64, n int64, raw []byte) {
		if len(raw) == 0 {
			raw = nil
		}
		if raw != nil && !json.Valid(raw) {
			raw = []byte(`{}`)
		}
		checkBodies(t, s, fl, n, raw)
	})
}

// FuzzAppendTS checks the "ts" writer against time.Time.AppendFormat, in
// any zone, for times of every year time.Time holds.
func FuzzAppendTS(f *testing.F) {
	for _, s := range []int64{0, -62135596800, 253402300799, 253402300800, 1764670000, -1} {
		f.Add(s, int64(999_999_999), 0)
	}
	f.Add(int64(1764670000), int64(123_456_789), 3600)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		ts := time.Unix(sec, nsec%1_000_000_000).In(time.FixedZone("z", offset%86400))
		got := string(events.AppendTS([]byte("x"), ts))
		if want := "x" + ts.UTC().Format(events.TimeFormat); got != want {
			t.Fatalf("appendTS(%v) = %q, want %q", ts, got, want)
		}
	})
}
