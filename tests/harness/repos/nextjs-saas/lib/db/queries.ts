import { and, desc, eq, isNull } from 'drizzle-orm';
import type { UIMessage } from 'ai';
import { cookies } from 'next/headers';
import { db } from './drizzle';
import { chats, teamMembers, teams, users } from './schema';
import { verifyToken } from '@/lib/auth/session';

export async function getUser() {
  const sessionCookie = (await cookies()).get('session');
  if (!sessionCookie?.value) return null;

  const sessionData = await verifyToken(sessionCookie.value);
  if (!sessionData?.user || new Date(sessionData.expires) < new Date()) return null;

  const [user] = await db
    .select()
    .from(users)
    .where(and(eq(users.id, sessionData.user.id), isNull(users.deletedAt)))
    .limit(1);
  return user ?? null;
}

export async function getTeamForUser() {
  const user = await getUser();
  if (!user) return null;

  const [row] = await db
    .select({ team: teams })
    .from(teamMembers)
    .innerJoin(teams, eq(teamMembers.teamId, teams.id))
    .where(eq(teamMembers.userId, user.id))
    .limit(1);
  return row?.team ?? null;
}

export async function createUserWithTeam(email: string, passwordHash: string) {
  const [user] = await db.insert(users).values({ email, passwordHash, role: 'owner' }).returning();
  const [team] = await db.insert(teams).values({ name: `${email}'s Team` }).returning();
  await db.insert(teamMembers).values({ userId: user.id, teamId: team.id, role: 'owner' });
  return user;
}

export async function getChatsForTeam(teamId: number) {
  return db.select().from(chats).where(eq(chats.teamId, teamId)).orderBy(desc(chats.createdAt)).limit(20);
}

export async function getChatById(id: number) {
  const [chat] = await db.select().from(chats).where(eq(chats.id, id)).limit(1);
  return chat ? { ...chat, messages: chat.messages as UIMessage[] } : null;
}

export async function saveChat(input: { id?: string; teamId: number; userId: number; messages: UIMessage[] }) {
  if (input.id) {
    await db.update(chats).set({ messages: input.messages }).where(eq(chats.id, Number(input.id)));
    return;
  }
  await db.insert(chats).values({ teamId: input.teamId, userId: input.userId, messages: input.messages });
}
