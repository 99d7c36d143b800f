package turns_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hubcli/hub/turns"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		line    string
		want    turns.Input
		wantErr string // a part of the error; "" for none
	}{
		{`{"prompt":"fix it"}`, turns.Input{Prompt: "fix it"}, ""},
		{` {"prompt" : "a\nb"} `, turns.Input{Prompt: "a\nb"}, ""},
		{`{"interrupt":true}`, turns.Input{Interrupt: true}, ""},
		{`{"interrupt":false}`, turns.Input{}, `"interrupt" must be true`},
		{`{"prompt":""}`, turns.Input{}, `"prompt" is empty`},
		{`{"prompt":" \n\t "}`, turns.Input{}, `"prompt" is empty (or only white space)`},
		{`["prompt"]`, turns.Input{}, `it is a JSON array`},
		{`{"prompt":3}`, turns.Input{}, `"prompt" must be a string`},
		{`{"promt":"x"}`, turns.Input{}, `unknown field "promt"`},
		{`{"prompt":"x","interrupt":true}`, turns.Input{}, "on one line"},
		{`{}`, turns.Input{}, "empty object"},
		{`null`, turns.Input{}, "null"},
		{`"just a string"`, turns.Input{}, "not one JSON object"},
		{`{"prompt":"x"} {"prompt":"y"}`, turns.Input{}, "more after it"},
		{`{"prompt":"x"`, turns.Input{}, "not one JSON object"},
		{`fix the test`, turns.Input{}, "not one JSON object"},
	}
	for _, tt := range tests {
		got, err := turns.Decode([]byte(tt.line))
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("Decode(%s) = %+v, %v; want %+v", tt.line, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Decode(%s) = %+v, %v; want an error with %q", tt.line, got, err, tt.wantErr)
		}
	}
}

// TestReaderLines: blank lines are skipped but counted, a last line
// without "\n" is read, and the error of a bad line names its number.
func TestReaderLines(t *testing.T) {
	r := turns.NewReader(strings.NewReader("{\"prompt\":\"one\"}\n\n  \r\n{\"interrupt\":true}\n{\"prompt\":\"two\"}\nnot json\n{\"prompt\":\"never read\"}"))
	var got []turns.Input
	var err error
	for {
		var in turns.Input
		in, err = r.Next()
		if err != nil {
			break
		}
		got = append(got, in)
	}
	want := []turns.Input{{Prompt: "one"}, {Interrupt: true}, {Prompt: "two"}}
	if len(got) != len(want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("input %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var le *turns.LineError
	if !errors.As(err, &le) || le.Line != 6 || !strings.HasPrefix(err.Error(), "line 6: ") {
		t.Errorf("error after the good lines = %v, want a *LineError for line 6", err)
	}

	r = turns.NewReader(strings.NewReader(`{"prompt":"last, no newline"}`))
	if in, err := r.Next(); err != nil || in.Prompt != "last, no newline" {
		t.Errorf("Next() = %+v, %v; want the last line's prompt", in, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next() at the end = %v, want io.EOF", err)
	}
}

// TestReaderLongLine: a line over MaxLineBytes is an error naming it,
// read no further than the cap.
func TestReaderLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	long := `{"prompt":"` + strings.Repeat("x", turns.MaxLineBytes) + `"}` + "\n"
	r := turns.NewReader(strings.NewReader(`{"prompt":"ok"}` + "\n" + long))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	var le *turns.LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("Next() on an over-long line = %v, want a *LineError for line 2", err)
	}
}

// FuzzDecode: Decode never panics, and what it accepts is exactly one
// input: a non-empty prompt or an interrupt.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"prompt":"fix it"}`, `{"interrupt":true}`, `{"prompt":"x","interrupt":true}`, `{}`, `null`, `[1]`,
		`{"prompt":"\u2028\ud83d"}`, `{"prompt":"a"} x`, "{\"prompt\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in, err := turns.Decode(line)
		if err == nil && (in.Prompt == "") == !in.Interrupt {
			t.Errorf("Decode(%q) = %+v: want a prompt or an interrupt, one of them", line, in)
		}
	})
}
