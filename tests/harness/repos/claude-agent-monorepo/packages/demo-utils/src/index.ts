import type { SDKMessage } from "@anthropic-ai/claude-agent-sdk";

const dim = (s: string) => `\x1b[2m${s}\x1b[0m`;

/** Pretty-print one streamed SDK message to the terminal. */
export function printMessage(message: SDKMessage): void {
  switch (message.type) {
    case "assistant":
      for (const block of message.message.content) {
        if (block.type === "text") process.stdout.write(`${block.text}\n`);
        else if (block.type === "tool_use") console.log(dim(`→ ${block.name} ${JSON.stringify(block.input)}`));
      }
      break;
    case "result":
      console.log(dim(`done (${message.subtype}) in ${message.num_turns} turns, $${message.total_cost_usd.toFixed(4)}`));
      break;
    default:
      break;
  }
}
