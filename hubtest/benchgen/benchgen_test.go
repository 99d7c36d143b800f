package benchgen_test

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/hubtest/benchgen"
)

// TestGenerate: every agent's recorded tool turn is found, the transcript
// reaches its size with valid JSON lines, and a seed gives the same bytes.
func TestGenerate(t *testing.T) {
	t.Parallel()
	for _, agent := range benchgen.Agents {
		var a, b bytes.Buffer
		n, err := benchgen.Generate(&a, agent, benchgen.Code, 1<<20, 7)
		if err != nil || n < 1<<20 || n != int64(a.Len()) {
			t.Fatalf("Generate(%s, 1 MiB) = %d, %v; wrote %d", agent, n, err, a.Len())
		}
		if _, err := benchgen.Generate(&b, agent, benchgen.Code, 1<<20, 7); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("Generate(%s) twice with one seed: different bytes (%v)", agent, err)
		}
		for i, l := range bytes.Split(bytes.TrimSuffix(a.Bytes(), []byte("\n")), []byte("\n")) {
			if !gjson.ValidBytes(l) || !gjson.GetBytes(l, "type").Exists() {
				t.Fatalf("Generate(%s): line %d is not a typed JSON object: %.200s", agent, i+1, l)
			}
		}
	}
	var logs bytes.Buffer
	if _, err := benchgen.Generate(&logs, "codex", benchgen.Logs, 1<<20, 7); err != nil || bytes.Count(logs.Bytes(), []byte(`\`)) > logs.Len()/40 {
		t.Errorf("Generate(codex, Logs): %v, one backslash per %d bytes, want fewer", err, logs.Len()/max(bytes.Count(logs.Bytes(), []byte(`\`)), 1))
	}
	if _, err := benchgen.Generate(&bytes.Buffer{}, "nope", benchgen.Code, 1, 1); err == nil {
		t.Error("Generate(nope) = nil error, want one")
	}
}
