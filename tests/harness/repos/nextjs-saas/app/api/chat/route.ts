import { openai } from '@ai-sdk/openai';
import { convertToModelMessages, stepCountIs, streamText, tool, type UIMessage } from 'ai';
import { z } from 'zod';
import { getTeamForUser, getUser, saveChat } from '@/lib/db/queries';
import { buildTeamContext } from '@/lib/ai/context';

// Allow streaming responses up to 30 seconds
export const maxDuration = 30;

export async function POST(req: Request) {
  const user = await getUser();
  if (!user) {
    return new Response('Unauthorized', { status: 401 });
  }
  const team = await getTeamForUser();

  const { id, messages }: { id?: string; messages: UIMessage[] } = await req.json();

  const result = streamText({
    model: openai(process.env.OPENAI_MODEL ?? 'gpt-4o-mini'),
    system: [
      'You are the in-app assistant for Acme, a B2B SaaS product.',
      'Answer questions about the product and the user\'s workspace. Be brief.',
      await buildTeamContext(team)
    ].join('\n\n'),
    messages: convertToModelMessages(messages),
    stopWhen: stepCountIs(3),
    tools: {
      getTeamPlan: tool({
        description: "Look up the current team's subscription plan and status.",
        inputSchema: z.object({}),
        execute: async () => ({
          plan: team?.planName ?? 'Free',
          status: team?.subscriptionStatus ?? 'none'
        })
      })
    }
  });

  return result.toUIMessageStreamResponse({
    originalMessages: messages,
    onFinish: async ({ messages: finished }) => {
      if (team) {
        await saveChat({ id, teamId: team.id, userId: user.id, messages: finished });
      }
    }
  });
}
