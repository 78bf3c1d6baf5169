package mcpserver

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/skill/gate"
	"github.com/execledger/execledger/internal/skill/manifest"
)

//go:embed schemas/*.json
var schemaFiles embed.FS

// Input caps in bytes, the executor's (executor/authorize.go): arguments
// over them are refused before anything is submitted.
const (
	capEcho       = 16 << 10
	capProcessRun = 128 << 10
	capSkill      = 448 << 10
	capOther      = 64 << 10
)

// tool is one tool a session lists: its MCP definition, the schema its
// arguments must pass, and what the policy sees of it.
type tool struct {
	name, description string
	schema            json.RawMessage
	validate          func(json.RawMessage) error
	maxInput          int
	// for the Cedar evaluation
	skill            string
	skillVersion     string
	skillPublisher   string
	requiresApproval bool
	capabilities     []string
}

// builtins are the tools every executor runs, and process.run.
func builtins(processRun bool) ([]*tool, error) {
	defs := []struct {
		name, desc string
		max        int
	}{
		{"echo", "Return the given text; a probe that the ledger authorizes, records and attests like any tool.", capEcho},
		{"sleep", "Wait the given number of milliseconds (at most 30000).", capOther},
	}
	if processRun {
		defs = append(defs, struct {
			name, desc string
			max        int
		}{"process.run", "Run a program in the sandbox (tier B or C), in the run's own workspace, with no network unless allowed.", capProcessRun})
	}
	var out []*tool
	for _, d := range defs {
		raw, err := schemaFiles.ReadFile("schemas/" + d.name + ".json")
		if err != nil {
			return nil, err
		}
		v, err := compileSchema(d.name, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, &tool{name: d.name, description: d.desc, schema: json.RawMessage(raw), validate: v, maxInput: d.max})
	}
	return out, nil
}

// compileSchema compiles a JSON Schema into a validator of arguments.
func compileSchema(name string, raw []byte) (func(json.RawMessage) error, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("mcpserver: schema of %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("mcpserver: schema of %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: schema of %s: %w", name, err)
	}
	return func(args json.RawMessage) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(args)))
		if err != nil {
			return err
		}
		return s.Validate(v)
	}, nil
}

// skillTools reads the enabled skills' tools, with their manifests'
// descriptions and input schemas, through the reader.
func (s *Server) skillTools(ctx context.Context) ([]*tool, error) {
	if !s.opts.Skills {
		return nil, nil
	}
	rows, err := s.opts.Reader.Query(ctx, queryEnabledSkillTools)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: read the enabled skills (mcp.reader_url must be a ledger_auditor login): %w", err)
	}
	defer rows.Close()
	var out []*tool
	for rows.Next() {
		var toolID, skillID, version, publisher string
		var text []byte
		if err := rows.Scan(&toolID, &skillID, &version, &publisher, &text); err != nil {
			return nil, fmt.Errorf("mcpserver: read the enabled skills: %w", err)
		}
		m, err := manifest.Parse(text)
		if err != nil {
			s.opts.Logger.Warn("mcp: an enabled skill's manifest does not parse; its tools are not listed", "skill", skillID, "err", err)
			continue
		}
		i := slices.IndexFunc(m.Tools, func(t manifest.Tool) bool { return t.ID == toolID })
		if i < 0 {
			continue
		}
		mt := m.Tools[i]
		desc := mt.Description
		if desc == "" {
			desc = m.Description
		}
		out = append(out, &tool{name: toolID, description: desc, schema: mt.InputSchema, maxInput: capSkill,
			validate: func(args json.RawMessage) error { return mt.ValidateInput(args) },
			skill:    skillID, skillVersion: version, skillPublisher: publisher,
			requiresApproval: mt.RequiresApproval,
			capabilities:     gate.CapabilityClasses(m.Capabilities, s.opts.WasmPolicy)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mcpserver: read the enabled skills: %w", err)
	}
	return out, nil
}

// allowed is the policy's decision on a call of t by p in run, as the
// executor would evaluate it (executor/authorize.go): a tool the policy
// denies in the session's context is not listed.
func (s *Server) allowed(p *Principal, run string, t *tool) policy.Decision {
	req := policy.Request{
		Principal: p.Name, Tool: t.name, RunID: run, Session: run,
		Channel: p.channel(), Device: p.Device, ChannelBound: p.Channel != "", DeviceBound: p.Device != "",
		Sensitive: slices.Contains(s.opts.Sensitive, t.name) || t.requiresApproval,
	}
	if t.skill != "" {
		req.Skill, req.SkillVersion, req.SkillPublisher = t.skill, t.skillVersion, t.skillPublisher
		req.SkillRequiresApproval, req.Capabilities = t.requiresApproval, t.capabilities
	}
	return s.opts.Policy.Authorize(req)
}

// catalog is what p may call in run: the built-ins and the enabled skills'
// tools the policy does not deny.
func (s *Server) catalog(ctx context.Context, p *Principal, run string) ([]*tool, error) {
	all, err := builtins(s.opts.ProcessRun)
	if err != nil {
		return nil, err
	}
	skills, err := s.skillTools(ctx)
	if err != nil {
		return nil, err
	}
	all = append(all, skills...)
	var out []*tool
	for _, t := range all {
		if d := s.allowed(p, run, t); d.Allowed {
			out = append(out, t)
		}
	}
	return out, nil
}
