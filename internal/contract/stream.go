package contract

import "strings"

// The stream-name forms: a prefix and an identifier. Every event of a
// request is on its request stream; a run's budget and end on its run
// stream; a skill's lifecycle on its skill stream, a background process on
// its process stream, a channel's messages on its channel stream and a
// projection's failures and rebuilds on its projection stream. The trust
// store (a skill stream of its own name), the Merkle log and the
// executors' published policy have one stream each.
const (
	RequestPrefix    = "request:"
	RunPrefix        = "run:"
	SkillPrefix      = "skill:"
	ProcessPrefix    = "process:"
	ChannelPrefix    = "channel:"
	ProjectionPrefix = "projection:"

	TrustStream  = SkillPrefix + "trust" // the trust store's keys
	LogStream    = "log"
	PolicyStream = "policy"
)

// RequestStream is the stream of the request with id (a UUID's text).
func RequestStream(id string) string { return RequestPrefix + id }

// RequestID returns the id of a request stream's request.
func RequestID(stream string) (string, bool) { return strings.CutPrefix(stream, RequestPrefix) }

// StreamForm returns the form of stream: its prefix ("request:", ...) or,
// for a stream of its own, its whole name; "" when it has none of the
// contract's forms.
func StreamForm(stream string) string {
	for _, p := range []string{RequestPrefix, RunPrefix, SkillPrefix, ProcessPrefix, ChannelPrefix, ProjectionPrefix} {
		if strings.HasPrefix(stream, p) && len(stream) > len(p) {
			return p
		}
	}
	switch stream {
	case LogStream, PolicyStream:
		return stream
	}
	return ""
}
