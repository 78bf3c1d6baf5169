package wasmrun

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/execledger/execledger/internal/egress"
)

// Capabilities names what a skill may reach outside its instance: the
// same shape holds a module's registration (Module.Capabilities, from its
// manifest) and the policy (Config.Policy). A call is granted their
// intersection (grant), so each capability needs both.
type Capabilities struct {
	HTTPHosts       []string // hosts requests may go to (http_request)
	Secrets         []string // names of secrets the SecretProvider holds
	StoragePrefixes []string // key prefixes of the key-value store
	Channels        []string // channels messages may be published on
}

// Capability classes, as events and Palyra's host functions name them.
const (
	classHTTP    = "http"
	classSecret  = "secret"
	classStorage = "storage"
	classChannel = "channel"
)

// Handle bases, Palyra's: a handle is its class's base plus the index of
// the name among the class's granted names, sorted.
const (
	handleBaseHTTP    = 10_000
	handleBaseSecret  = 20_000
	handleBaseStorage = 30_000
	handleBaseChannel = 40_000
	maxGrantsPerClass = 10_000 // so that handles of two classes never meet
	maxCapabilityName = 256    // bytes
)

// classes lists the classes in handle order.
var classes = []string{classHTTP, classSecret, classStorage, classChannel}

// list returns c's names of class.
func (c Capabilities) list(class string) []string {
	switch class {
	case classHTTP:
		return c.HTTPHosts
	case classSecret:
		return c.Secrets
	case classStorage:
		return c.StoragePrefixes
	case classChannel:
		return c.Channels
	}
	return nil
}

func handleBase(class string) int32 {
	return int32(handleBaseHTTP * (1 + slices.Index(classes, class)))
}

// grant is what a call of a module registered with reg may use under
// policy: for each class the names both list, sorted, without
// duplicates. Handles index these lists.
func grant(policy, reg Capabilities) Capabilities {
	both := func(p, r []string) []string {
		out := []string{}
		for _, n := range r {
			if slices.Contains(p, n) && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	return Capabilities{
		// Host entries in the egress proxy's normal form (case, trailing
		// dot), so that two spellings of one host meet; an entry that does
		// not parse stays as written, and matches only itself.
		HTTPHosts:       both(normalHosts(policy.HTTPHosts), normalHosts(reg.HTTPHosts)),
		Secrets:         both(policy.Secrets, reg.Secrets),
		StoragePrefixes: both(policy.StoragePrefixes, reg.StoragePrefixes),
		Channels:        both(policy.Channels, reg.Channels),
	}
}

// normalHosts is hosts in the egress allowlist's normal form.
func normalHosts(hosts []string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h
		if a, err := egress.ParseAllowlist([]string{h}); err == nil {
			if e := a.Entries(); len(e) == 1 {
				out[i] = e[0]
			}
		}
	}
	return out
}

// handle is Palyra's <class>-handle: the handle of the index-th granted
// name of class, or -1 when there is none.
func (c Capabilities) handle(class string, index int32) int32 {
	if index < 0 || int(index) >= len(c.list(class)) {
		return -1
	}
	return handleBase(class) + index
}

// lookup resolves a handle of class to its granted name.
func (c Capabilities) lookup(class string, handle int32) (string, bool) {
	i := handle - handleBase(class)
	names := c.list(class)
	if i < 0 || int(i) >= len(names) {
		return "", false
	}
	return names[i], true
}

// check refuses empty, overlong or duplicated names, names with control
// characters, and more names of a class than its handles can number.
func (c Capabilities) check() error {
	for _, class := range classes {
		names := c.list(class)
		if len(names) > maxGrantsPerClass {
			return fmt.Errorf("%d %s capabilities; at most %d", len(names), class, maxGrantsPerClass)
		}
		for i, n := range names {
			switch {
			case n == "" || len(n) > maxCapabilityName:
				return fmt.Errorf("%s capability %q is empty or longer than %d bytes", class, n, maxCapabilityName)
			case strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }):
				return fmt.Errorf("%s capability %q has a control character", class, n)
			case slices.Contains(names[:i], n):
				return fmt.Errorf("%s capability %q is listed twice", class, n)
			case class == classChannel && !channelName.MatchString(n):
				return fmt.Errorf("channel %q: a channel is the stream channel:<name>, so its name is 1 to 128 of [A-Za-z0-9._:-], starting with a letter or digit", n)
			}
		}
	}
	return nil
}

// enforcement is the granted set as a Result records it.
func (c Capabilities) enforcement() map[string]any {
	m := map[string]any{}
	for _, class := range classes {
		m[class] = slices.Clone(c.list(class))
	}
	return m
}

// channelName is the executor's rule for channel stream names.
var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
