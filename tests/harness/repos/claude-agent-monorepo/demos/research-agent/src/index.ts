import { query, type Options, type SDKUserMessage } from "@anthropic-ai/claude-agent-sdk";
// import OpenAI from "openai"; // was used for the GPT side-by-side in the talk; kept for the diff
import { printMessage } from "@demos/utils";
import { researchServer } from "./tools.js";

const SYSTEM_PROMPT = `You are a research assistant.
Search the web, read at least two sources with fetch_url, and record each
supported claim with save_finding before you answer. Finish with a short
answer followed by the list of sources you used.`;

// Custom SDK MCP tools need streaming input, so the question is sent as a
// one-message async stream rather than a plain string.
async function* userTurn(text: string): AsyncGenerator<SDKUserMessage> {
  yield {
    type: "user",
    session_id: "",
    parent_tool_use_id: null,
    message: { role: "user", content: text },
  };
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<number> {
  const question = argv.join(" ").trim();
  if (!question) {
    console.error('usage: pnpm research "<question>"');
    return 2;
  }

  const options: Options = {
    model: process.env.CLAUDE_MODEL ?? "claude-sonnet-4-5",
    systemPrompt: SYSTEM_PROMPT,
    mcpServers: { research: researchServer },
    allowedTools: ["WebSearch", "mcp__research__fetch_url", "mcp__research__save_finding"],
    disallowedTools: ["Bash", "Write", "Edit"],
    maxTurns: 12,
  };

  let exitCode = 1;
  for await (const message of query({ prompt: userTurn(question), options })) {
    printMessage(message);
    if (message.type === "result") {
      exitCode = message.subtype === "success" ? 0 : 1;
    }
  }
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
