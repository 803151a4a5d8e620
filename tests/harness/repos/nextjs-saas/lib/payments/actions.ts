'use server';

import { redirect } from 'next/navigation';
import { getTeamForUser } from '@/lib/db/queries';
import { createCheckoutSession, createCustomerPortalSession } from './stripe';

export async function checkoutAction(formData: FormData) {
  const team = await getTeamForUser();
  const priceId = formData.get('priceId') as string;
  await createCheckoutSession({ team, priceId });
}

export async function customerPortalAction() {
  const team = await getTeamForUser();
  if (!team) redirect('/sign-in');
  const portalSession = await createCustomerPortalSession(team);
  redirect(portalSession.url);
}
