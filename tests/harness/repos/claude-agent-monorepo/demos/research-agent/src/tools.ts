import { appendFile, mkdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";

const NOTES_FILE = resolve(process.env.NOTES_FILE ?? "notes/findings.md");
const MAX_CHARS = 8_000;

export const fetchUrl = tool(
  "fetch_url",
  "Fetch a web page and return its text content (truncated). Use after WebSearch to read a source.",
  { url: z.string().url().describe("Absolute http(s) URL") },
  async ({ url }) => {
    const res = await fetch(url, { headers: { "user-agent": "research-agent-demo/0.2" } });
    if (!res.ok) {
      return { content: [{ type: "text", text: `HTTP ${res.status} for ${url}` }], isError: true };
    }
    const html = await res.text();
    const text = html.replace(/<script[\s\S]*?<\/script>/g, "").replace(/<[^>]+>/g, " ");
    return { content: [{ type: "text", text: text.replace(/\s+/g, " ").slice(0, MAX_CHARS) }] };
  },
);

export const saveFinding = tool(
  "save_finding",
  "Append one finding and the URL that supports it to the local notes file.",
  {
    claim: z.string().min(1).describe("One-sentence finding"),
    source: z.string().url().describe("URL backing the claim"),
  },
  async ({ claim, source }) => {
    await mkdir(dirname(NOTES_FILE), { recursive: true });
    await appendFile(NOTES_FILE, `- ${claim} (${source})\n`, "utf8");
    return { content: [{ type: "text", text: `saved to ${NOTES_FILE}` }] };
  },
);

export const researchServer = createSdkMcpServer({
  name: "research",
  version: "0.2.0",
  tools: [fetchUrl, saveFinding],
});
