'use server';

import { z } from 'zod';
import { redirect } from 'next/navigation';
import { compare } from 'bcryptjs';
import { eq } from 'drizzle-orm';
import { db } from '@/lib/db/drizzle';
import { users } from '@/lib/db/schema';
import { hashPassword, setSession } from '@/lib/auth/session';
import { createCheckoutSession } from '@/lib/payments/stripe';
import { createUserWithTeam } from '@/lib/db/queries';

const credentials = z.object({
  email: z.string().email().min(3).max(255),
  password: z.string().min(8).max(100)
});

export async function signIn(_prev: unknown, formData: FormData) {
  const parsed = credentials.safeParse(Object.fromEntries(formData));
  if (!parsed.success) return { error: parsed.error.errors[0].message };
  const { email, password } = parsed.data;

  const [user] = await db.select().from(users).where(eq(users.email, email)).limit(1);
  if (!user || !(await compare(password, user.passwordHash))) {
    return { error: 'Invalid email or password. Please try again.', email };
  }

  await setSession(user);
  if (formData.get('redirect') === 'checkout') {
    return createCheckoutSession({ team: null, priceId: String(formData.get('priceId')) });
  }
  redirect('/dashboard');
}

export async function signUp(_prev: unknown, formData: FormData) {
  const parsed = credentials.safeParse(Object.fromEntries(formData));
  if (!parsed.success) return { error: parsed.error.errors[0].message };
  const { email, password } = parsed.data;

  const user = await createUserWithTeam(email, await hashPassword(password));
  if (!user) return { error: 'Failed to create user. Please try again.', email };

  await setSession(user);
  redirect('/dashboard');
}
