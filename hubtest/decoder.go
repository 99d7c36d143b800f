package hubtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest/benchgen"
	"github.com/hubcli/hub/normalize"
)

// CheckLineNotKept checks that a decoder keeps nothing of the line it is
// given past the Decode call (normalize.Decoder's contract), which matters
// for the decoders that read their largest lines in place (normalize.View).
// It decodes agent's recorded transcripts and a generated one twice: from
// fresh copies of each line, and from one buffer that is overwritten after
// every call, checked with a normalize.Index that the decoder reads through
// when it is normalize.Indexed, as the runner does; the events and the
// outcome must be the same. It fails t (with
// the two event lists or outcomes) when they are not, and also when agent
// has no recorded transcripts.
func CheckLineNotKept(t *testing.T, agent string, newDec func() normalize.Decoder) {
	t.Helper()
	rec, err := benchgen.Recorded(agent)
	if err != nil {
		t.Fatal(err)
	}
	var gen bytes.Buffer
	if _, err := benchgen.Generate(&gen, agent, benchgen.Code, 4<<20, 3); err != nil {
		t.Fatal(err)
	}
	transcripts := append(rec, bytes.Split(bytes.TrimSuffix(gen.Bytes(), []byte("\n")), []byte("\n")))
	zero := 0
	end := normalize.End{ExitCode: &zero, Stderr: "some stderr"}
	for n, lines := range transcripts {
		fresh, reused := newDec(), newDec()
		var ix normalize.Index
		if x, ok := reused.(normalize.Indexed); ok {
			x.UseIndex(&ix)
		}
		var want []string
		var kept []events.Body
		var buf []byte
		for _, l := range lines {
			if len(l) == 0 || l[0] != '{' || !gjson.ValidBytes(l) {
				continue
			}
			for _, b := range fresh.Decode(nil, bytes.Clone(l)) {
				want = append(want, encode(t, b))
			}
			buf = append(buf[:0], l...)
			if !ix.Valid(buf) {
				t.Fatalf("%s transcript %d: Index.Valid(%.200q) = false, gjson.ValidBytes = true", agent, n, buf)
			}
			kept = append(kept, reused.Decode(nil, buf)...)
			for i := range buf {
				buf[i] = '#'
			}
		}
		var got []string
		for _, b := range kept {
			got = append(got, encode(t, b))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s transcript %d: events differ when the line buffer is reused:\n got: %q\nwant: %q", agent, n, got, want)
		}
		if g, w := outcome(t, reused.Outcome(end)), outcome(t, fresh.Outcome(end)); g != w {
			t.Errorf("%s transcript %d: outcome differs when the line buffer is reused:\n got: %s\nwant: %s", agent, n, g, w)
		}
	}
}

func encode(t *testing.T, b events.Body) string {
	out, err := events.Event{Body: b}.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func outcome(t *testing.T, o normalize.Outcome) string {
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
