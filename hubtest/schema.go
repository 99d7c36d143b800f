package hubtest

// Schema checks: encoded hub events against events.Schema, with a
// maintained JSON Schema library (santhosh-tekuri/jsonschema, draft
// 2020-12). Tests of every package that produces events use them.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The schema, compiled once per process.
var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func compiled() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(events.Schema))
		if err != nil {
			schemaErr = fmt.Errorf("hubtest: parse schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		const url = "hub.event.v1.json"
		if err := c.AddResource(url, doc); err != nil {
			schemaErr = fmt.Errorf("hubtest: add schema: %w", err)
			return
		}
		schema, schemaErr = c.Compile(url)
	})
	return schema, schemaErr
}

// ValidateLine validates one encoded event (a JSON object, without or with a
// trailing newline) against events.Schema. It also checks the output rules of
// SPEC §3 the schema cannot express: no raw U+2028/U+2029 and no newline
// inside the line. It returns an error saying which rule the line breaks,
// with the line's start, or nil.
func ValidateLine(line []byte) error {
	s, err := compiled()
	if err != nil {
		return err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("event contains a raw newline: %.200s", line)
	}
	if bytes.Contains(line, []byte("\u2028")) || bytes.Contains(line, []byte("\u2029")) {
		return fmt.Errorf("event contains a raw U+2028/U+2029: %.200s", line)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("event is not JSON: %w: %.200s", err, line)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("event does not match schema: %v\n%.500s", err, line)
	}
	return nil
}

// ValidateStream validates a whole JSONL stream of one run: every line valid,
// seq 0,1,2… without gaps, the same run_id throughout, and exactly one
// run.finished, as the last line. It returns an error naming the first
// line that breaks one of these, or nil.
func ValidateStream(stream []byte) error {
	lines := bytes.Split(bytes.TrimSuffix(stream, []byte("\n")), []byte("\n"))
	if len(lines) == 0 || len(lines[0]) == 0 {
		return fmt.Errorf("empty event stream")
	}
	var runID string
	for i, line := range lines {
		if err := ValidateLine(line); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		var head struct {
			Seq   int64  `json:"seq"`
			RunID string `json:"run_id"`
			Type  string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		if head.Seq != int64(i) {
			return fmt.Errorf("line %d: seq = %d, want %d", i+1, head.Seq, i)
		}
		if i == 0 {
			runID = head.RunID
		} else if head.RunID != runID {
			return fmt.Errorf("line %d: run_id = %q, want %q", i+1, head.RunID, runID)
		}
		last := i == len(lines)-1
		if (head.Type == "run.finished") != last {
			return fmt.Errorf("line %d: type %s; run.finished must be exactly the last event", i+1, head.Type)
		}
	}
	return nil
}

// ValidateBodies encodes each body as an event of agent (seq = its index,
// a fixed time and run id) and validates it with ValidateLine. It returns the
// first failure, naming the body's Go type: decoder tests and fuzz targets
// use it to check that whatever a decoder emits is valid hub.event/v1.
func ValidateBodies(agent string, bodies []events.Body) error {
	for i, b := range bodies {
		ev := events.Event{Seq: int64(i), TS: time.Unix(0, 0).UTC(), RunID: "run_test", Agent: agent, Body: b}
		enc, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("body %d: MarshalJSON(%T): %w", i, b, err)
		}
		if err := ValidateLine(enc); err != nil {
			return fmt.Errorf("body %d (%T): %w", i, b, err)
		}
	}
	return nil
}
