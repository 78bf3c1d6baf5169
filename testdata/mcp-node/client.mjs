// An independent MCP client (the TypeScript SDK from npm) for execledger's
// end-to-end test, cmd/execledger/mcp_node_test.go. It connects over stdio
// (spawning the server) or streamable HTTP (with a bearer token), lists
// the tools, calls echo, reads the call's attestation, sends arguments
// that fail the schema, and prints one JSON object with what it saw.
//
// Configuration (environment): MCP_MODE=stdio with MCP_COMMAND,
// MCP_ARGS (a JSON array) and MCP_ENV (a JSON object); or MCP_MODE=http
// with MCP_URL and MCP_TOKEN.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const mode = process.env.MCP_MODE;
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({
    command: process.env.MCP_COMMAND,
    args: JSON.parse(process.env.MCP_ARGS || "[]"),
    env: JSON.parse(process.env.MCP_ENV || "{}"),
    stderr: "inherit",
  });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
  });
} else {
  console.error(`MCP_MODE must be stdio or http, not ${mode}`);
  process.exit(2);
}

const client = new Client({ name: "execledger-node-e2e", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion() };
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
const progress = [];
const call = await client.callTool(
  { name: "echo", arguments: { text: "from node" } },
  undefined,
  { onprogress: (p) => progress.push(p.message) },
);
out.echo = { isError: call.isError ?? false, text: call.content.map((c) => c.text).join(""), structured: call.structuredContent };
out.progress = progress;
const uri = `execledger://requests/${call.structuredContent.request_id}/attestation`;
out.attestation = (await client.readResource({ uri })).contents[0].text;
const bad = await client.callTool({ name: "echo", arguments: { txt: "typo" } });
out.schemaError = { isError: bad.isError ?? false, text: bad.content.map((c) => c.text).join("") };
try {
  await client.callTool({ name: "no.such.tool", arguments: {} });
  out.unknownTool = "no error";
} catch (e) {
  out.unknownTool = String(e.message);
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
