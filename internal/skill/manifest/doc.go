// Package manifest parses and checks a skill's manifest, skill.toml.
//
// The manifest names the skill (a dotted id, a semantic version, the
// publisher), its tools (each with a module, an optional entrypoint, JSON
// Schemas for its input and output, and whether a call needs approval), the
// capabilities it asks for (http egress hosts, secrets, storage prefixes,
// channels; filesystem roots are refused, tier A preopens no directory), its
// quotas and the oldest Execledger it runs on.
//
// Parsing is strict and reports every problem at once, each at its line
// (ParseError): an unknown key in any table, a value of the wrong type, a
// value out of its rules, a wildcard without wildcard_opt_in. TOML is
// decoded by BurntSushi/toml, the decoder the configuration uses, into
// plain maps that this package reads key by key; the decoder keeps key
// positions to itself, and not per entry of an array of tables, so lines
// come from a small lexical scan of the accepted document (keyLines).
//
// JSON Schemas (draft 2020-12 unless $schema names another draft) are
// compiled at parse time by santhosh-tekuri/jsonschema/v6 with a loader
// that refuses every URL: a schema may refer only to itself, and no file
// or network is ever read. A compiled schema is read-only, so a Tool's
// ValidateInput and ValidateOutput are safe for concurrent use.
package manifest
