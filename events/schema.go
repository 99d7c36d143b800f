package events

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of one hub.event/v1 event, as
// `hub schema` prints it. It is the contract of SPEC §3 and §4 in machine form;
// the tests validate every event they produce against it.
//
//go:embed schema.json
var Schema []byte
