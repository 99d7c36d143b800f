package events

// The body encoders, for encode_test.go.
var (
	AppendBody        = appendBody
	AppendBodyReflect = appendBodyReflect
	AppendTS          = appendTS
)
