import type { Team } from '@/lib/db/schema';
// import { Pinecone } from "@pinecone-database/pinecone"

// TODO(rag): index the help-center articles and pull the top matches in here.
// const pc = new Pinecone({ apiKey: process.env.PINECONE_API_KEY! });
// const index = pc.index('help-center');

export async function buildTeamContext(team: Team | null): Promise<string> {
  if (!team) {
    return 'The user has no team yet; suggest creating one from the dashboard.';
  }
  return [
    `Team: ${team.name}`,
    `Plan: ${team.planName ?? 'Free'} (${team.subscriptionStatus ?? 'no subscription'})`,
    'Billing is managed in the Stripe customer portal under Dashboard > Manage subscription.'
  ].join('\n');
}
