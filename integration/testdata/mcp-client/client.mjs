// Drives `sandboxctl mcp` with the official TypeScript SDK's client over
// stdio: argv[2] is sandboxctl, argv[3] the daemon's socket. Prints one JSON
// object of what it saw, for integration/mcp_test.go to check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [, , sandboxctl, socket] = process.argv;
const transport = new StdioClientTransport({ command: sandboxctl, args: ["--socket", socket, "mcp"], stderr: "inherit" });
const client = new Client({ name: "sandboxd-test", version: "1.0.0" });
await client.connect(transport);

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const seen = { server: client.getServerVersion(), tools: (await client.listTools()).tools.map((t) => t.name).sort() };
let r = await client.callTool({ name: "run_python", arguments: { code: "x = 6 * 7\nprint('set')" } });
seen.first = { text: text(r), session: r.structuredContent.session_id, created: r.structuredContent.session_created === true };
r = await client.callTool({ name: "run_python", arguments: { code: "x" } });
seen.second = { result: r.structuredContent.result, session: r.structuredContent.session_id };
r = await client.callTool({ name: "run_shell", arguments: { command: "echo from-shell; exit 3" } });
seen.shell = { exit_code: r.structuredContent.exit_code, text: text(r) };
r = await client.callTool({ name: "read_file", arguments: { path: "missing.txt" } });
seen.missing = { is_error: r.isError === true, text: text(r) };
await client.close();
console.log(JSON.stringify(seen));
