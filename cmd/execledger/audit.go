package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/audit"
)

// audit reads the audit trail (internal/audit) with the filter its flags
// make, and prints the rows as a table or JSON lines.

func newAuditCmd(e *env) *cobra.Command {
	var principal, tool, since, until, request string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit trail: the decisions and outcomes the caller may see",
		Long: `Audit reads ledger.audit_trail in recorded_at, position order, as the login's row security
shows it: auditors and admins every row, a submitter its own principal's.

--since (inclusive) and --until (exclusive) take an RFC 3339 time, a date (midnight UTC) or a
duration ago (90m, 24h, 7d: --since 24h is the last day), as in requests list and export. It prints
the earliest --limit rows (0: all), with a note on stderr when more match.`,
		Example: `  execledger audit --since 24h
  execledger audit --principal alice --tool echo --limit 0 --json
  execledger audit --request 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := auditFlags(time.Now(), principal, tool, since, until, request, limit)
			if err != nil {
				return fail(exitUsage, "audit: %v", err)
			}
			return runAudit(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&principal, "principal", "", "only this principal's rows")
	fl.StringVar(&tool, "tool", "", "only this tool's rows")
	fl.StringVar(&since, "since", "", "from this `TIME` on: "+timeFlagHelp)
	fl.StringVar(&until, "until", "", "before this `TIME` (as --since)")
	fl.StringVar(&request, "request", "", "only this request's rows (its `ID`)")
	fl.IntVar(&limit, "limit", 1000, limitFlagHelp("rows, the earliest", 1000))
	e.jsonFlag(cmd, "print one JSON object per line")
	e.configFlag(cmd)
	return cmd
}

func runAudit(ctx context.Context, e *env, f audit.Filter) error {
	_, pool, err := e.connectReader(ctx, e.config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	p := newAuditPrinter(e.io.out, e.json)
	more, err := audit.Each(ctx, pool, f, p.row)
	if err == nil {
		err = p.flush()
	}
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if more {
		fmt.Fprintf(e.io.err, "execledger: audit: the first %d rows; more match (raise --limit, or narrow --since/--until)\n", f.Limit)
	}
	return nil
}

// auditFlags checks audit's flags and makes its filter; times relative to now.
func auditFlags(now time.Time, principal, tool, since, until, request string, limit int) (audit.Filter, error) {
	f := audit.Filter{Principal: principal, Tool: tool, Limit: limit}
	var err error
	if f.Since, f.Until, err = timeRange(since, until, now); err != nil {
		return f, err
	}
	if request != "" {
		if f.Request, err = uuid.Parse(request); err != nil {
			return f, fmt.Errorf("--request: %q is not a request id (a UUID)", request)
		}
	}
	if limit < 0 {
		return f, fmt.Errorf("--limit: %d is negative (0 means no limit)", limit)
	}
	return f, nil
}

// auditPrinter writes rows as JSON lines, or as a table it aligns at flush.
type auditPrinter struct {
	enc *json.Encoder
	tw  *tabwriter.Writer
}

func newAuditPrinter(w io.Writer, asJSON bool) *auditPrinter {
	if asJSON {
		return &auditPrinter{enc: json.NewEncoder(w)}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POSITION\tTIME\tKIND\tPRINCIPAL\tTOOL\tREQUEST\tRESULT\tSTAGE\tREASON\tTIER")
	return &auditPrinter{tw: tw}
}

func (p *auditPrinter) row(r audit.Row) error {
	if p.enc != nil {
		return p.enc.Encode(r)
	}
	result, reason := r.Decision, r.ReasonCode
	if r.Kind == "outcome" {
		result, reason = r.State, r.ErrorKind
	}
	_, err := fmt.Fprintf(p.tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Position,
		r.RecordedAt.UTC().Format("2006-01-02T15:04:05.000Z"), r.Kind, r.Principal, r.Tool, r.RequestID,
		orDash(result), orDash(r.Stage), orDash(reason), orDash(r.Tier))
	return err
}

func (p *auditPrinter) flush() error {
	if p.tw != nil {
		return p.tw.Flush()
	}
	return nil
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}
