// Package tracing sets up OpenTelemetry tracing for serve from the standard
// OTEL_* environment variables: off unless they ask for it, and then an OTLP
// exporter (HTTP/protobuf or gRPC) or the console.
//
// Tracing is on when OTEL_TRACES_EXPORTER is "otlp" or "console", or when
// it is unset and an OTLP endpoint is (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none turn it off. The protocol comes from
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL
// ("http/protobuf", the default, or "grpc"). Everything else the
// specification defines (endpoint, headers, TLS, compression, timeout,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, the
// OTEL_BSP_* batch settings) the OpenTelemetry SDK reads from the process
// environment itself.
//
// Unlike the specification's default, an unset OTEL_TRACES_EXPORTER does not
// mean "otlp": a ledger that starts exporting spans to localhost:4318 because
// nobody said otherwise would log an export error every few seconds.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Settings is what the environment asks for.
type Settings struct {
	Enabled  bool
	Exporter string // "otlp" or "console"
	Protocol string // for otlp: "http/protobuf" or "grpc"
}

// FromEnv reads Settings from environ (KEY=value entries).
func FromEnv(environ []string) (Settings, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "OTEL_") {
			env[k] = strings.TrimSpace(v)
		}
	}
	if strings.EqualFold(env["OTEL_SDK_DISABLED"], "true") {
		return Settings{}, nil
	}
	exporter := strings.ToLower(env["OTEL_TRACES_EXPORTER"])
	switch exporter {
	case "":
		if env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "" && env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "" {
			return Settings{}, nil
		}
		exporter = "otlp"
	case "none":
		return Settings{}, nil
	case "otlp", "console":
	default:
		return Settings{}, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q: execledger exports spans with otlp or console (or none)", env["OTEL_TRACES_EXPORTER"])
	}
	s := Settings{Enabled: true, Exporter: exporter}
	if exporter == "otlp" {
		s.Protocol = env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]
		if s.Protocol == "" {
			s.Protocol = env["OTEL_EXPORTER_OTLP_PROTOCOL"]
		}
		if s.Protocol == "" {
			s.Protocol = "http/protobuf"
		}
		if s.Protocol != "http/protobuf" && s.Protocol != "grpc" {
			return Settings{}, fmt.Errorf("tracing: OTLP protocol %q: execledger speaks http/protobuf or grpc", s.Protocol)
		}
	}
	return s, nil
}

// Provider is a running tracer provider; Shutdown flushes what is queued.
type Provider struct {
	*sdktrace.TracerProvider
}

// Start builds the exporter and provider Settings ask for; nil when tracing
// is off. version is the program's, recorded as service.version.
func Start(ctx context.Context, s Settings, version string) (*Provider, error) {
	if !s.Enabled {
		return nil, nil
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch {
	case s.Exporter == "console":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
	case s.Protocol == "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: %s exporter: %w", s.Exporter, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "execledger"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return &Provider{sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// TracePool makes the pool's queries spans of the trace their context
// carries (exaring/otelpgx). A query whose context has no recording span,
// such as an executor's idle poll, makes none.
func TracePool(pc *pgxpool.Config, tp trace.TracerProvider) {
	pc.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(tp))
}
