package normalize_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/normalize"
)

// testdataLines returns every line of every transcript and golden file in
// testdata/<agent>.
func testdataLines(tb testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "*", "*.jsonl"))
	if len(files) == 0 {
		tb.Fatal("no testdata")
	}
	var lines [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		lines = append(lines, bytes.Split(b, []byte("\n"))...)
	}
	return lines
}

var jsonCases = []string{
	``, ` `, `{}`, `[]`, ` {"a" : [1, -2.5e+3, true, false, null, "x\"y\\"] } `, `"\u00e9\ud83d\ude00"`,
	`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{a:1}`, `[01]`, `-`, `1.`, `1e`, `1e+`, `.5`, `-0.0e-0`,
	`"abc`, `"a\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", "\"a\x01\"", `tru`, `nul`, `{"a":1}{`, `[[[]]]`,
	`"` + strings.Repeat(`abcdefg\"`, 9) + `"`, `"` + strings.Repeat("é日本", 20) + `"`, "\"\xff\xfe\"",
	`{"k":"` + strings.Repeat(`\\`, 17) + `"}`, `{"k":"` + strings.Repeat(`x\\\"`, 5) + `"}`,
}

func TestValidMatchesGjson(t *testing.T) {
	t.Parallel()
	for _, c := range jsonCases {
		if got, want := normalize.Valid([]byte(c)), gjson.Valid(c); got != want {
			t.Errorf("Valid(%q) = %v, want %v (gjson)", c, got, want)
		}
	}
	for _, l := range testdataLines(t) {
		if got, want := normalize.Valid(l), gjson.ValidBytes(l); got != want {
			t.Errorf("Valid(%q) = %v, want %v (gjson)", l, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	for _, l := range testdataLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := normalize.Valid(b), gjson.ValidBytes(b); got != want {
			t.Fatalf("Valid(%q) = %v, want %v (gjson)", b, got, want)
		}
	})
}

// checkFields compares Fields with gjson.Get for every key of obj that
// gjson reads as a plain key, and for a missing one.
func checkFields(t *testing.T, obj string) {
	if !gjson.Valid(obj) {
		return
	}
	var keys []string
	gjson.Parse(obj).ForEach(func(k, _ gjson.Result) bool {
		// gjson reads these as path syntax (a '{' or '[' key starts a
		// multipath), not as the key.
		if !strings.ContainsAny(k.Str, `.*?|#@\!:=<>%"{[`) && k.Str != "" {
			keys = append(keys, k.Str)
		}
		return len(keys) < 7
	})
	keys = append(keys, "no such key")
	got := normalize.Fields(obj, keys...)
	for i, k := range keys {
		if want := gjson.Get(obj, k).Raw; got[i] != want {
			t.Fatalf("Fields(%q)[%q] = %q, want %q (gjson)", obj, k, got[i], want)
		}
	}
}

func TestFieldsMatchesGjson(t *testing.T) {
	t.Parallel()
	for _, l := range testdataLines(t) {
		checkFields(t, string(l))
		// and one level down, where the big values are
		gjson.ParseBytes(l).ForEach(func(_, v gjson.Result) bool {
			checkFields(t, v.Raw)
			return true
		})
	}
	checkFields(t, ` { "a" : 1 , "b":"x\"}" ,"a":2, "c":{"d":[1,{"e":"]"}]}, "e\u0041":true, "f":null } `)
	if got := normalize.Fields(`[1]`, "a"); got[0] != "" {
		t.Errorf(`Fields("[1]", "a") = %q, want ""`, got[0])
	}
}

func FuzzFields(f *testing.F) {
	f.Add(`{"a":"x","b":{"c":[1,"]"]},"d":-1.5}`)
	for _, l := range testdataLines(f) {
		f.Add(string(l))
	}
	f.Fuzz(checkFields)
}

func checkCutString(t *testing.T, raw string, capBytes int) {
	if !gjson.Valid(raw) {
		return
	}
	out, size, cut := normalize.CutString(raw, capBytes)
	wOut, wSize, wCut := normalize.CutOutput(gjson.Parse(raw).String(), capBytes)
	if out != wOut || size != wSize || cut != wCut {
		t.Fatalf("CutString(%q, %d) = %q, %d, %v; want %q, %d, %v", raw, capBytes, out, size, cut, wOut, wSize, wCut)
	}
}

func TestCutString(t *testing.T) {
	t.Parallel()
	long := strings.Repeat(`ab\n\"é\u00e9\ud83d\ude00\ud800x\\`, 50)
	tricky := strings.Repeat(`\\u0041 \\\u0041 \\\\ \\\\\" \udc00\ud83d \ud83d\u0041 \/`, 30)
	for _, raw := range []string{`"` + long + `"`, `"` + tricky + `"`, `"` + strings.Repeat("é", 100) + `"`, `"` + strings.Repeat(`\u65e5`, 40) + `"`,
		`"plain text that is long enough"`, `123`, `null`, `{"a":"b"}`, `""`, `"\ud83d\ude00\ud83d\ude00"`,
		`"` + strings.Repeat(`\u00C9\uD83D\uDE00 \uDBFF\uDFFF\uD800\uDBFF`, 20) + `"`, // upper-case hex
		"\"" + strings.Repeat("a\xff\xc3b\\n", 30) + "\""} {                           // not UTF-8: copied as is
		for capBytes := 0; capBytes < 60; capBytes++ {
			checkCutString(t, raw, capBytes)
		}
		checkCutString(t, raw, 1000)
	}
}

func FuzzCutString(f *testing.F) {
	f.Add("ab\n\"é😀", 3)
	f.Add(`\ud83d\ude00\ud800`, 5)
	f.Fuzz(func(t *testing.T, s string, capBytes int) {
		capBytes = max(capBytes%200, 0)
		b, _ := json.Marshal(s)
		checkCutString(t, string(b), capBytes)
		checkCutString(t, `"`+s+`"`, capBytes) // raw escapes, if valid
	})
}

// TestValidDeep: unlike gjson.ValidBytes, which recurses without bound (a
// line of millions of '[' would exhaust the stack), Valid refuses nesting
// deeper than agents ever write.
func TestValidDeep(t *testing.T) {
	t.Parallel()
	ok := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	if !normalize.Valid([]byte(ok)) || normalize.Valid([]byte(deep)) {
		t.Errorf("Valid(1000 deep) = %v, Valid(20000 deep) = %v; want true, false",
			normalize.Valid([]byte(ok)), normalize.Valid([]byte(deep)))
	}
}

func checkElements(t *testing.T, arr string) {
	if !gjson.Valid(arr) || !gjson.Parse(arr).IsArray() {
		if got := normalize.Elements(arr); got != nil && gjson.Valid(arr) {
			t.Fatalf("Elements(%q) = %q, want none", arr, got)
		}
		return
	}
	got := normalize.Elements(arr)
	want := gjson.Parse(arr).Array()
	if len(got) != len(want) {
		t.Fatalf("Elements(%q) = %q, want %d elements (gjson)", arr, got, len(want))
	}
	for i := range want {
		if got[i] != want[i].Raw {
			t.Fatalf("Elements(%q)[%d] = %q, want %q (gjson)", arr, i, got[i], want[i].Raw)
		}
	}
}

func TestElementsMatchesGjson(t *testing.T) {
	t.Parallel()
	for _, a := range []string{`[]`, ` [ ] `, `[1]`, `[ 1 , "a\"]" , {"b":[2,3]} , [[]] , null, true, -1.5e3 ]`, `{"a":1}`, `"x"`} {
		checkElements(t, a)
	}
	for _, l := range testdataLines(t) {
		gjson.ParseBytes(l).ForEach(func(_, v gjson.Result) bool {
			checkElements(t, v.Raw)
			v.ForEach(func(_, w gjson.Result) bool {
				checkElements(t, w.Raw)
				return true
			})
			return true
		})
	}
}

func FuzzElements(f *testing.F) {
	f.Add(`[1,"a",{"b":[2]},[],null]`)
	f.Fuzz(checkElements)
}

// checkIndex checks that an Index made by Valid of the line
// {"a":[S,{"b":S}],"c":S,"d":1} gives the answers of the package functions,
// which read everything, for each part of it in place; S is s as a JSON
// string, repeated to be long enough for the Index to record it.
func checkIndex(t *testing.T, s string, capBytes int) {
	b, _ := json.Marshal(strings.Repeat(s, 1+300/(len(s)+1)))
	str := string(b)
	line := []byte(`{"a":[` + str + `,{"b":` + str + `}],"c":` + str + `,"d":1}`)
	var x normalize.Index
	if !x.Valid(line) {
		t.Fatalf("Index.Valid(%q) = false", line)
	}
	view := normalize.View(line)
	f, want := x.Fields(view, "a", "c", "d"), normalize.Fields(view, "a", "c", "d")
	if f != want {
		t.Fatalf("Index.Fields(%q) = %q, want %q", line, f, want)
	}
	els, wantEls := x.Elements(f[0]), normalize.Elements(f[0])
	if fmt.Sprint(els) != fmt.Sprint(wantEls) || len(els) != 2 {
		t.Fatalf("Index.Elements(%q) = %q, want %q", f[0], els, wantEls)
	}
	for _, raw := range []string{els[0], x.Fields(els[1], "b")[0], f[1]} {
		out, size, cut := x.CutString(raw, capBytes)
		wOut, wSize, wCut := normalize.CutString(raw, capBytes)
		if out != wOut || size != wSize || cut != wCut {
			t.Fatalf("Index.CutString(%q, %d) = %q, %d, %v; want %q, %d, %v", raw, capBytes, out, size, cut, wOut, wSize, wCut)
		}
	}
	// A copy of the line is not the line the Index knows: read in full.
	other := strings.Clone(view)
	if got := x.Fields(other, "a", "c", "d"); got != want {
		t.Fatalf("Index.Fields of a copy = %q, want %q", got, want)
	}
}

func TestIndex(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "ab\n\"é😀\\", "\x01\u2028", `\u0041`, "日本語", "\xed\xa0\xbd\xff"} {
		for _, c := range []int{0, 1, 5, 100, 299, 300, 301, 1000, 100000} {
			checkIndex(t, s, c)
		}
	}
}

func FuzzIndex(f *testing.F) {
	f.Add("ab\n\"é😀", 3)
	f.Fuzz(func(t *testing.T, s string, capBytes int) {
		checkIndex(t, s, max(capBytes%2000, 0))
	})
}
