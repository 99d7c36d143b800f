package hubtest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/hubcli/hub/adapters/pi"
	"github.com/hubcli/hub/hubtest"
)

// TestRoot: the module root is found from this package's depth.
func TestRoot(t *testing.T) {
	t.Parallel()
	root := hubtest.Root()
	for _, p := range []string{"go.mod", "testdata/pi/text.jsonl"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("Root() = %q: %v", root, err)
		}
	}
}

// TestValidateStream: a golden stream is valid; cut, reordered or with a
// foreign run id it is not.
func TestValidateStream(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(filepath.Join(hubtest.Root(), "testdata", "pi", "text.golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := hubtest.ValidateStream(good); err != nil {
		t.Fatalf("ValidateStream(pi text golden) = %v, want nil", err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(good, []byte("\n")), []byte("\n"))
	for name, bad := range map[string][]byte{
		"empty":           nil,
		"no run.finished": bytes.Join(lines[:len(lines)-1], nil),
		"seq gap":         bytes.Join(append([][]byte{lines[0]}, lines[2:]...), nil),
		"other run id":    bytes.Replace(good, []byte(`"run_id":"run_golden"`), []byte(`"run_id":"run_other"`), 1),
		"not JSON":        append(bytes.Clone(good), "{\n"...),
	} {
		if err := hubtest.ValidateStream(bad); err == nil {
			t.Errorf("ValidateStream(%s) = nil, want an error", name)
		}
	}
}

// TestTranscripts: Update writes the golden file a Check then accepts, and
// a replay of a recorded transcript is hub's golden output byte for byte.
func TestTranscripts(t *testing.T) {
	t.Parallel()
	src := filepath.Join(hubtest.Root(), "testdata", "pi")
	dir := t.TempDir()
	for _, f := range []string{"text.jsonl", "text.exit", "text.stderr"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr := hubtest.Transcripts{Agent: "pi", Model: "mock/mock-model", Dir: dir}
	t.Run("update", func(t *testing.T) {
		u := tr
		u.Update = true
		u.Check(t)
	})
	t.Run("check", tr.Check)
	got, err := os.ReadFile(filepath.Join(dir, "text.golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(src, "text.golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Transcripts.Check with Update wrote:\n%s\nwant testdata/pi/text.golden.jsonl:\n%s", got, want)
	}
}
