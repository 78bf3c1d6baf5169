package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/execledger/execledger/internal/testdb"
)

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want Settings
		err  string
	}{
		{nil, Settings{}, ""},
		{[]string{"OTEL_SERVICE_NAME=x"}, Settings{}, ""},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"}, Settings{true, "otlp", "http/protobuf"}, ""},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://c:4318/v1/traces"}, Settings{true, "otlp", "http/protobuf"}, ""},
		{[]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, Settings{true, "otlp", "grpc"}, ""},
		{[]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf"},
			Settings{true, "otlp", "http/protobuf"}, ""},
		{[]string{"OTEL_TRACES_EXPORTER=console"}, Settings{true, "console", ""}, ""},
		{[]string{"OTEL_TRACES_EXPORTER=none", "OTEL_EXPORTER_OTLP_ENDPOINT=http://x"}, Settings{}, ""},
		{[]string{"OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=otlp"}, Settings{}, ""},
		{[]string{"OTEL_TRACES_EXPORTER=zipkin"}, Settings{}, "zipkin"},
		{[]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, Settings{}, "http/json"},
	} {
		got, err := FromEnv(c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want one naming %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.env, got, err, c.want)
		}
	}
}

// TestStartExportsOverOTLP: the exporter the standard variables name
// delivers spans to an OTLP/HTTP endpoint (a local collector stand-in that
// decodes the protobuf requests).
func TestStartExportsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var names []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	// The OTLP exporter reads its endpoint from the process environment.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	s, err := FromEnv([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL})
	if err != nil || !s.Enabled {
		t.Fatalf("%+v, %v", s, err)
	}
	tp, err := Start(context.Background(), s, "test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "exported")
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(names) != 1 || names[0] != "exported" {
		t.Fatalf("the collector received %v", names)
	}
}

func TestStartOff(t *testing.T) {
	tp, err := Start(context.Background(), Settings{}, "test")
	if tp != nil || err != nil {
		t.Fatalf("%v, %v", tp, err)
	}
}

// TestTracePool: a query made within a span becomes its child; one made
// outside any span (an idle poll) makes no span at all.
func TestTracePool(t *testing.T) {
	db := testdb.New(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	pc, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	TracePool(pc, tp)
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("a query outside any span made %d spans", n)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	if _, err := pool.Exec(ctx, "SELECT 2"); err != nil {
		t.Fatal(err)
	}
	parent.End()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var child bool
		for _, s := range exp.GetSpans() {
			if s.Parent.SpanID() == parent.SpanContext().SpanID() && s.SpanContext.TraceID() == parent.SpanContext().TraceID() {
				child = true
			}
		}
		if child {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no query span under the caller's: %v", exp.GetSpans())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
